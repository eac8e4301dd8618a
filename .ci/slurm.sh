#!/usr/bin/env bash
# A single-node Slurm cluster for the end-to-end test of the Slurm launch recipes
# (tests/recipes/slurm-*.sbatch, tests/it/recipes.rs), from Debian's own packages,
# unpacked into a folder: nothing is installed into the system.
#
#   bash .ci/slurm.sh install   # download + unpack + check; idempotent
#   bash .ci/slurm.sh start     # install if needed, start munged, slurmctld and slurmd, wait
#                               # until `sinfo` shows the node idle; idempotent
#   bash .ci/slurm.sh stop      # stop the three daemons (those this script started)
#   bash .ci/slurm.sh status    # exit 0 if the node answers idle/mixed/allocated, 3 if not
#   bash .ci/slurm.sh env       # prints `export NAME=VALUE` lines (PATH, LD_LIBRARY_PATH,
#                               # SLURM_CONF) under which sbatch, squeue, sinfo... reach it
#
# Exit codes: 0 done; 3 status: not running; 4 Debian's packages could not be fetched
# (no registry reachable, or the packages are not in its index): the test skips on 4 only,
# saying so; 1 anything else (a broken unpack, a daemon that does not start: a failure).
#
# How, and why this way:
#   * `apt-get download` fetches slurmctld, slurmd, slurm-client, munge and, following their
#     Depends, every library package the host does not already have (on Debian 12:
#     slurm-wlm-basic-plugins, libmunge2, libhwloc15, liblua5.1-0; ~3.5 MB), and `dpkg-deb -x`
#     unpacks them into $DIR/root. Packaging helpers (adduser, ucf, debconf, lsb-base) are not
#     needed: nothing is configured through them. If the host's apt lists lack the packages
#     (a fresh image with empty lists), a private apt state in $DIR/apt reads the host's own
#     sources, so the host's lists are not touched either.
#   * The binaries find their libraries through LD_LIBRARY_PATH (searched before their
#     RUNPATH, /usr/lib/x86_64-linux-gnu/slurm-wlm), their configuration through SLURM_CONF,
#     and their plugins through PluginDir in that configuration. munged gets its key, socket,
#     log, pid and seed files on its command line, and Slurm the socket through
#     AuthInfo=socket=...
#   * slurmd starts slurmstepd from the path compiled in (/usr/sbin/slurmstepd); when that
#     path does not exist, it is made a symbolic link to the unpacked one, and `stop` removes
#     the link it made. That link is the one thing written outside $DIR.
#   * The cluster: one node with 2 CPUs (the configuration is authoritative:
#     SlurmdParameters=config_overrides), select/cons_tres by CPU, proctrack/linuxproc,
#     task/none, no cgroups, no accounting; state, spool and logs in $DIR. Everything runs as
#     the calling user, who must be root (slurmd starts jobs as their owner).
#
# Environment:
#   TRACK_SLURM_DIR      install and state folder (default ${TMPDIR:-/tmp}/track-slurm)
#   TRACK_SLURM_PORT     slurmctld's port; slurmd takes the next one (default 6817)
#   TRACK_SLURM_TIMEOUT  seconds `start` waits for the node to be idle (default 60)
#   TRACK_SLURM_APT      `private`: fetch the package lists into $DIR/apt even when the
#                        host's know slurmd (the path a fresh image with empty lists takes)
set -euo pipefail

# Everything chatty goes to stderr, so that `eval "$(bash .ci/slurm.sh env)"` reads only the
# exports; fd 3 is the real stdout.
exec 3>&1 1>&2

readonly EXIT_NOT_RUNNING=3
readonly EXIT_NO_PACKAGES=4
readonly ROOTS="slurmctld slurmd slurm-client munge"
# Install-time helpers that nothing here runs.
readonly SKIP_DEPS=" adduser ucf debconf debconf-2.0 cdebconf lsb-base install-info perl-base dpkg init-system-helpers "

log() { printf 'slurm: %s\n' "$*" >&2; }
die() { log "error: $*"; exit 1; }
no_packages() { log "error: $*"; exit "$EXIT_NO_PACKAGES"; }
out() { printf '%s\n' "$*" >&3; }
have() { command -v "$1" >/dev/null 2>&1; }

DIR=${TRACK_SLURM_DIR:-${TMPDIR:-/tmp}/track-slurm}
mkdir -p "$DIR"
chmod 0755 "$DIR"
DIR=$(cd "$DIR" && pwd)
readonly DIR
readonly ROOT=$DIR/root
readonly APT_DIR=$DIR/apt
readonly ETC=$DIR/etc
readonly RUN=$DIR/run
readonly LOGS=$DIR/log
readonly STATE=$DIR/state
readonly SPOOL=$DIR/spool
readonly CONF=$ETC/slurm.conf
readonly MUNGE_SOCKET=$RUN/munge.socket
readonly PORT=${TRACK_SLURM_PORT:-6817}
readonly TIMEOUT=${TRACK_SLURM_TIMEOUT:-60}
readonly NODE=track-node
readonly PARTITION=track
readonly LIB=$ROOT/usr/lib/x86_64-linux-gnu
readonly PLUGINS=$LIB/slurm-wlm
readonly STEPD_COMPILED=/usr/sbin/slurmstepd
readonly STEPD_LINK_MARK=$DIR/stepd-link-made

TMP_DIRS=()
cleanup() { local d; for d in "${TMP_DIRS[@]}"; do rm -rf -- "$d"; done; }
trap cleanup EXIT

# Serialise install/start/stop: parallel tests may all call `start`.
take_lock() {
    have flock || return 0
    exec 9>"$DIR/.lock"
    flock -w 300 9 || die "timed out waiting for the lock $DIR/.lock"
}

# The variables under which the unpacked binaries run.
export_env() {
    export PATH=$ROOT/usr/bin:$ROOT/usr/sbin:$PATH
    export LD_LIBRARY_PATH=$LIB:$PLUGINS${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
    export SLURM_CONF=$CONF
}

# ---------------------------------------------------------------------------- apt

# Uses the host's apt when its lists know slurmd; otherwise a private state (lists and cache
# in $DIR/apt) over the host's own sources, updated here. APT_CONFIG is read after the host's
# apt.conf.d, so its settings win; the hooks cleared are the host's, on the host's cache.
apt_choose() {
    have apt-get && have dpkg-deb || no_packages "apt-get and dpkg-deb are required (a Debian host)"
    if [[ ${TRACK_SLURM_APT:-} != private && -n $(apt-cache show --no-all-versions slurmd 2>/dev/null) ]]; then
        log "apt: using the host's package lists"
        return
    fi
    log "apt: updating private package lists in $APT_DIR, from the host's sources"
    mkdir -p "$APT_DIR"/lists/partial "$APT_DIR"/cache/archives/partial
    cat >"$APT_DIR/apt.conf" <<EOF
Dir::State::Lists "$APT_DIR/lists";
Dir::Cache "$APT_DIR/cache";
Dir::Cache::pkgcache "pkgcache.bin";
Dir::Cache::srcpkgcache "srcpkgcache.bin";
Acquire::Languages "none";
Acquire::IndexTargets::deb::DEP-11::DefaultEnabled "false";
#clear APT::Update::Post-Invoke;
#clear APT::Update::Post-Invoke-Success;
APT::Sandbox::User "root";
EOF
    export APT_CONFIG=$APT_DIR/apt.conf
    apt-get -q update </dev/null || no_packages "apt-get update failed: Debian's package registry cannot be reached"
    [[ -n $(apt-cache show --no-all-versions slurmd 2>/dev/null) ]] ||
        no_packages "the host's apt sources have no slurmd package"
}

installed_on_host() {
    [[ $(dpkg-query -W -f='${Status}' "$1" 2>/dev/null) == "install ok installed" ]]
}

# The packages to fetch: ROOTS and, through their Depends and Pre-Depends, every package the
# host lacks. An OR-group already met by the host is skipped; otherwise its first real
# alternative is taken. One apt-cache call per level of the tree (each call reads the whole
# index: ~1 s where the binary cache is off, as on Docker-built hosts).
resolve_packages() {
    local -A seen=()
    local -a level=($ROOTS) below
    PACKAGES=()
    local pkg line kind name group=() met alt choice
    while ((${#level[@]})); do
        for pkg in "${level[@]}"; do
            seen[$pkg]=1
            PACKAGES+=("$pkg")
        done
        below=()
        while IFS= read -r line; do
            if [[ $line =~ ^[^[:space:]] ]]; then
                pkg=$line
                group=()
                continue
            fi
            [[ $line =~ ^[[:space:]]*(\|?)(Pre)?Depends:[[:space:]]*(.*)$ ]] || continue
            kind=${BASH_REMATCH[1]}
            name=${BASH_REMATCH[3]}
            group+=("$name")
            [[ $kind == "|" ]] && continue
            # The group is complete: is it met on the host, or skipped?
            met=0
            choice=""
            for alt in "${group[@]}"; do
                if [[ $SKIP_DEPS == *" ${alt//[<>]/} "* ]] || installed_on_host "$alt"; then
                    met=1
                    break
                fi
                if [[ -z $choice && $alt != \<* ]]; then
                    choice=$alt
                fi
            done
            group=()
            ((met)) && continue
            [[ -n $choice ]] || die "cannot resolve a dependency of $pkg (only virtual packages)"
            if [[ -z ${seen[$choice]:-} ]]; then
                seen[$choice]=1
                below+=("$choice")
            fi
        done < <(apt-cache depends --no-recommends --no-suggests --no-conflicts --no-breaks \
            --no-replaces --no-enhances "${level[@]}" 2>/dev/null)
        level=("${below[@]}")
    done
}

# ------------------------------------------------------------------------ install

# Checks that the binaries and the plugins this configuration loads find every library.
verify_install() {
    local root=$1 f missing=""
    local lp=$root/usr/lib/x86_64-linux-gnu:$root/usr/lib/x86_64-linux-gnu/slurm-wlm
    local -a files=(usr/sbin/munged usr/sbin/slurmctld-wlm usr/sbin/slurmd-wlm usr/sbin/slurmstepd-wlm
        usr/bin/sbatch usr/bin/sinfo usr/bin/squeue usr/bin/scontrol usr/bin/sacct usr/bin/munge)
    for f in auth_munge cred_munge select_cons_tres proctrack_linuxproc task_none sched_backfill \
        accounting_storage_none jobcomp_none jobacct_gather_none mpi_none switch_none; do
        files+=("usr/lib/x86_64-linux-gnu/slurm-wlm/$f.so")
    done
    for f in "${files[@]}"; do
        [[ -e $root/$f ]] || { log "missing after unpacking: $f"; return 1; }
        missing+=$(LD_LIBRARY_PATH=$lp ldd "$root/$f" 2>&1 | awk -v f="$f" '/not found/ { print "  " $1 " (needed by " f ")" }')
    done
    if [[ -n $missing ]]; then
        log "libraries not found:"
        printf '%s\n' "$missing" >&2
        return 1
    fi
}

install() {
    if [[ -f $ROOT/.complete ]] && verify_install "$ROOT"; then
        log "already unpacked in $ROOT ($(paste -sd' ' "$ROOT/.packages"))"
        return
    fi
    [[ $(uname -m) == x86_64 ]] || die "only x86_64 is supported (found $(uname -m))"
    apt_choose
    resolve_packages
    log "packages: ${PACKAGES[*]}"
    local tmp new=$DIR/root.new deb
    tmp=$(mktemp -d "$DIR/tmp.XXXXXX")
    TMP_DIRS+=("$tmp")
    (cd "$tmp" && apt-get -q -o APT::Sandbox::User=root download "${PACKAGES[@]}" </dev/null) ||
        no_packages "apt-get download ${PACKAGES[*]} failed: Debian's package registry cannot be reached"
    rm -rf "$new"
    mkdir -p "$new"
    : >"$tmp/packages"
    for deb in "$tmp"/*.deb; do
        dpkg-deb -x "$deb" "$new"
        printf '%s=%s\n' "$(dpkg-deb -f "$deb" Package)" "$(dpkg-deb -f "$deb" Version)" >>"$tmp/packages"
    done
    verify_install "$new" || die "the unpacked packages do not work (see above)"
    mv "$tmp/packages" "$new/.packages"
    rm -rf "$ROOT"
    mv "$new" "$ROOT"
    touch "$ROOT/.complete"
    rm -rf "$APT_DIR"
    log "installed $(wc -l <"$ROOT/.packages") packages into $ROOT ($(du -sh "$ROOT" | cut -f1))"
}

# -------------------------------------------------------------------------- start

write_config() {
    mkdir -p "$ETC" "$RUN" "$LOGS" "$STATE" "$SPOOL"
    chmod 0700 "$ETC" "$RUN"
    if [[ ! -s $ETC/munge.key ]]; then
        (umask 077 && head -c 1024 /dev/urandom >"$ETC/munge.key")
    fi
    local host
    host=$(uname -n)
    host=${host%%.*}
    cat >"$CONF" <<EOF
# Written by .ci/slurm.sh: a single-node cluster for tests, in $DIR.
ClusterName=track
SlurmctldHost=$host(127.0.0.1)
SlurmctldPort=$PORT
SlurmdPort=$((PORT + 1))
SlurmUser=$(id -un)
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$MUNGE_SOCKET
PluginDir=$PLUGINS
StateSaveLocation=$STATE
SlurmdSpoolDir=$SPOOL/slurmd
SlurmctldPidFile=$RUN/slurmctld.pid
SlurmdPidFile=$RUN/slurmd.pid
SlurmctldLogFile=$LOGS/slurmctld.log
SlurmdLogFile=$LOGS/slurmd.log
SlurmctldDebug=info
SlurmdDebug=info
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
MpiDefault=none
SwitchType=switch/none
SchedulerType=sched/backfill
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
SlurmdParameters=config_overrides
ReturnToService=2
MaxArraySize=1001
MinJobAge=300
SlurmdTimeout=60
InactiveLimit=0
KillWait=5
NodeName=$NODE NodeHostname=$host NodeAddr=127.0.0.1 CPUs=2 State=UNKNOWN
PartitionName=$PARTITION Nodes=$NODE Default=YES MaxTime=INFINITE State=UP
EOF
}

pid_alive() { # PIDFILE
    local pid
    [[ -s $1 ]] || return 1
    pid=$(<"$1")
    [[ $pid =~ ^[0-9]+$ ]] && kill -0 "$pid" 2>/dev/null
}

node_state() {
    sinfo -h -N -n "$NODE" -o '%t' 2>/dev/null | head -n1
}

running() {
    [[ -f $ROOT/.complete && -f $CONF ]] || return 1
    pid_alive "$RUN/munged.pid" && pid_alive "$RUN/slurmctld.pid" && pid_alive "$RUN/slurmd.pid" || return 1
    export_env
    [[ $(node_state) =~ ^(idle|mix|alloc) ]]
}

# slurmd starts slurmstepd from the compiled-in path.
link_stepd() {
    if [[ -e $STEPD_COMPILED || -L $STEPD_COMPILED ]]; then
        if [[ -L $STEPD_COMPILED && $(readlink "$STEPD_COMPILED") == "$ROOT/usr/sbin/slurmstepd-wlm" ]]; then
            return
        fi
        [[ -L $STEPD_COMPILED && ! -e $STEPD_COMPILED ]] || {
            log "using the host's $STEPD_COMPILED"
            return
        }
        rm -f "$STEPD_COMPILED"
    fi
    ln -s "$ROOT/usr/sbin/slurmstepd-wlm" "$STEPD_COMPILED" ||
        die "cannot link $STEPD_COMPILED (slurmd starts job steps from there)"
    touch "$STEPD_LINK_MARK"
}

show_logs() {
    local f
    for f in "$LOGS"/*.out "$LOGS"/munged.log "$LOGS"/slurmctld.log "$LOGS"/slurmd.log; do
        [[ -s $f ]] || continue
        log "--- last lines of $f"
        tail -n 15 "$f" >&2
    done
}

# Starts a daemon that forks into the background. It gets none of this script's descriptors
# (the caller's stdout and stderr, which a test reads to their end, and the lock), and what it
# says before its log file is open goes to $LOGS/NAME.out.
daemon() { # NAME ARGS...
    "$@" </dev/null >>"$LOGS/$1.out" 2>&1 3>&- 9>&- || { show_logs; die "$1 did not start"; }
}

start() {
    [[ $(id -u) == 0 ]] || die "must run as root (slurmd starts jobs as the user who submitted them)"
    if running; then
        log "already running (node $NODE $(node_state))"
        return
    fi
    install
    stop_daemons
    write_config
    export_env
    link_stepd
    local started=$SECONDS state=""
    daemon munged --force --socket="$MUNGE_SOCKET" --key-file="$ETC/munge.key" \
        --log-file="$LOGS/munged.log" --pid-file="$RUN/munged.pid" --seed-file="$STATE/munged.seed"
    munge --socket="$MUNGE_SOCKET" -n | unmunge --socket="$MUNGE_SOCKET" >/dev/null ||
        { show_logs; die "munge cannot encode and decode a credential"; }
    daemon slurmctld-wlm
    daemon slurmd-wlm -N "$NODE"
    while true; do
        state=$(node_state || true)
        case $state in
        idle* | mix* | alloc*) break ;;
        drain* | down*)
            scontrol update nodename="$NODE" state=resume >/dev/null 2>&1 || true
            ;;
        esac
        if ((SECONDS - started > TIMEOUT)); then
            show_logs
            die "the node is not idle after ${TIMEOUT}s (state: ${state:-no answer})"
        fi
        sleep 0.5
    done
    log "node $NODE $state after $((SECONDS - started))s (SLURM_CONF=$CONF)"
}

stop_one() { # NAME PIDFILE
    local pid i
    [[ -s $2 ]] || return 0
    pid=$(<"$2")
    if [[ $pid =~ ^[0-9]+$ ]] && kill -0 "$pid" 2>/dev/null; then
        kill "$pid" 2>/dev/null || true
        for ((i = 0; i < 100; i++)); do
            kill -0 "$pid" 2>/dev/null || break
            sleep 0.1
        done
        kill -0 "$pid" 2>/dev/null && kill -9 "$pid" 2>/dev/null || true
        log "stopped $1 ($pid)"
    fi
    rm -f "$2"
}

stop_daemons() {
    stop_one slurmd "$RUN/slurmd.pid"
    stop_one slurmctld "$RUN/slurmctld.pid"
    stop_one munged "$RUN/munged.pid"
}

stop() {
    stop_daemons
    if [[ -f $STEPD_LINK_MARK ]]; then
        [[ -L $STEPD_COMPILED ]] && rm -f "$STEPD_COMPILED"
        rm -f "$STEPD_LINK_MARK"
    fi
}

case ${1:-} in
install)
    take_lock
    install
    ;;
start)
    take_lock
    start
    ;;
stop)
    take_lock
    stop
    ;;
status)
    if running; then
        out "running: node $NODE $(node_state), SLURM_CONF=$CONF"
    else
        out "not running"
        exit "$EXIT_NOT_RUNNING"
    fi
    ;;
env)
    export_env
    for v in PATH LD_LIBRARY_PATH SLURM_CONF; do
        out "export $v=$(printf '%q' "${!v}")"
    done
    ;;
*)
    log "usage: bash .ci/slurm.sh install|start|stop|status|env"
    exit 2
    ;;
esac
