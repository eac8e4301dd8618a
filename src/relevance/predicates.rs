//! Ground predicates of any planning domain, written as in PDDL-like ground truth:
//! `name(arg, …)`, each argument an opaque object name with an optional `:type` suffix —
//! `at(truck1:truck,depot:place)`, `in(pkg_red,truck1)`. Blocks-world is the domain `synth`
//! draws and `--blocks` expands: `clear(red:block)`, `on(red:block,blue:block)`,
//! `ontable(red:block)`, `holding(red:block)`.

use std::cmp::Ordering;
use std::fmt;
use std::hash::{Hash, Hasher};
use std::str::FromStr;

/// The blocks-world predicate names, in the order their predicates are listed.
const BLOCKS_NAMES: [&str; 4] = ["clear", "on", "ontable", "holding"];

/// One argument: an object's name and, when written, its type.
#[derive(Debug, Clone)]
struct Argument {
    name: String,
    kind: Option<String>,
}

/// A ground predicate. Two predicates are the same when their names and their arguments'
/// names are (case and spacing aside): the types are shown as written, not compared, so an
/// answer that drops them still names the predicate.
#[derive(Debug, Clone)]
pub struct Predicate {
    name: String,
    arguments: Vec<Argument>,
}

impl Predicate {
    /// `name` over objects of type `kind`.
    fn typed(name: &str, objects: &[&str], kind: &str) -> Self {
        Self {
            name: name.to_owned(),
            arguments: objects
                .iter()
                .map(|o| Argument {
                    name: (*o).to_owned(),
                    kind: Some(kind.to_owned()),
                })
                .collect(),
        }
    }

    /// Nothing is on the block (and it is not held).
    pub(crate) fn clear(block: &str) -> Self {
        Self::typed("clear", &[block], "block")
    }

    /// Block `a` sits directly on block `b`.
    pub(crate) fn on(a: &str, b: &str) -> Self {
        Self::typed("on", &[a, b], "block")
    }

    /// The block sits on the table.
    pub(crate) fn ontable(block: &str) -> Self {
        Self::typed("ontable", &[block], "block")
    }

    /// The gripper holds the block.
    pub(crate) fn holding(block: &str) -> Self {
        Self::typed("holding", &[block], "block")
    }

    /// The predicate's name (`clear`, `at`): per-type metrics group by it.
    pub(crate) fn kind(&self) -> &str {
        &self.name
    }

    /// Every blocks-world predicate over blocks of `colours`, in a stable order.
    pub(crate) fn all(colours: &[String]) -> Vec<Self> {
        let mut all = Vec::new();
        for c in colours {
            all.push(Self::clear(c));
            all.push(Self::ontable(c));
            all.push(Self::holding(c));
        }
        for a in colours {
            for b in colours.iter().filter(|b| *b != a) {
                all.push(Self::on(a, b));
            }
        }
        all
    }

    /// Where its name sorts: blocks-world's four first, in their usual order, then the rest
    /// by name.
    fn rank(&self) -> usize {
        BLOCKS_NAMES
            .iter()
            .position(|n| *n == self.name)
            .unwrap_or(BLOCKS_NAMES.len())
    }

    fn object_names(&self) -> impl Iterator<Item = &str> {
        self.arguments.iter().map(|a| a.name.as_str())
    }
}

impl PartialEq for Predicate {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}

impl Eq for Predicate {}

impl Hash for Predicate {
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.name.hash(state);
        for name in self.object_names() {
            name.hash(state);
        }
    }
}

impl PartialOrd for Predicate {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Predicate {
    fn cmp(&self, other: &Self) -> Ordering {
        self.rank()
            .cmp(&other.rank())
            .then_with(|| self.name.cmp(&other.name))
            .then_with(|| self.object_names().cmp(other.object_names()))
    }
}

impl fmt::Display for Predicate {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}(", self.name)?;
        for (i, a) in self.arguments.iter().enumerate() {
            if i > 0 {
                f.write_str(",")?;
            }
            f.write_str(&a.name)?;
            if let Some(kind) = &a.kind {
                write!(f, ":{kind}")?;
            }
        }
        f.write_str(")")
    }
}

/// Whether `s` is a name: letters, digits, `_`, `-` and `.`, not empty.
fn is_name(s: &str) -> bool {
    !s.is_empty()
        && s.chars()
            .all(|c| c.is_alphanumeric() || c == '_' || c == '-' || c == '.')
}

impl FromStr for Predicate {
    type Err = String;

    /// Parses `name(arg, …)` with optional `:type` suffixes; spaces and case are forgiven.
    /// The blocks-world names keep their arity and their arguments the type `block`.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let compact: String = s
            .chars()
            .filter(|c| !c.is_whitespace())
            .collect::<String>()
            .to_lowercase();
        let bad = || {
            format!(
                "`{s}` is not a ground predicate like at(truck1:truck,depot:place) or \
                 clear(red:block): a name, then objects in parentheses, separated by commas"
            )
        };
        let (name, rest) = compact.split_once('(').ok_or_else(bad)?;
        let inner = rest.strip_suffix(')').ok_or_else(bad)?;
        if !is_name(name) || inner.contains(['(', ')']) {
            return Err(bad());
        }
        let mut arguments = Vec::new();
        if !inner.is_empty() {
            for part in inner.split(',') {
                let (object, kind) = match part.split_once(':') {
                    Some((object, kind)) => (object, Some(kind)),
                    None => (part, None),
                };
                if !is_name(object) || kind.is_some_and(|k| !is_name(k)) {
                    return Err(bad());
                }
                arguments.push(Argument {
                    name: object.to_owned(),
                    kind: kind.map(str::to_owned),
                });
            }
        }
        let arity = match name {
            "on" => Some(2),
            "clear" | "ontable" | "holding" => Some(1),
            _ => None,
        };
        if let Some(arity) = arity {
            // Blocks-world as before: fixed arities, and every argument a block.
            if arguments.len() != arity {
                return Err(bad());
            }
            for a in &mut arguments {
                a.kind = Some("block".to_owned());
            }
        }
        Ok(Self {
            name: name.to_owned(),
            arguments,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_and_forgives_spacing() {
        for text in [
            "clear(red:block)",
            "on(red:block,blue:block)",
            "ontable(cyan:block)",
            "holding(green:block)",
            "at(truck1:truck,depot:place)",
            "in(pkg_red,truck1)",
            "handempty()",
        ] {
            let p: Predicate = text.parse().unwrap();
            assert_eq!(p.to_string(), text);
        }
        let p: Predicate = " On( Red:block , blue ) ".parse().unwrap();
        assert_eq!(p, Predicate::on("red", "blue"));
        assert_eq!(p.to_string(), "on(red:block,blue:block)");
        assert_eq!(p.kind(), "on");
        for bad in [
            "clear(red:block",
            "on(red:block)",
            "clear()",
            "clear(a;b)",
            "at(truck1,,depot)",
            "at(truck1:,depot)",
            "(truck1)",
            "at(f(x))",
        ] {
            let error = bad.parse::<Predicate>().unwrap_err();
            assert!(error.contains(bad), "{error}");
        }
    }

    #[test]
    fn types_are_shown_not_compared_and_blocks_sort_first() {
        let typed: Predicate = "at(Truck1:truck,depot:place)".parse().unwrap();
        let bare: Predicate = "at(truck1,depot)".parse().unwrap();
        assert_eq!(typed, bare);
        assert_eq!(typed.kind(), "at");
        let mut set = std::collections::BTreeSet::new();
        for p in [
            "at(a,b)",
            "holding(red)",
            "clear(red)",
            "on(red,blue)",
            "ontable(red)",
        ] {
            set.insert(p.parse::<Predicate>().unwrap());
        }
        let order: Vec<&str> = set.iter().map(Predicate::kind).collect();
        assert_eq!(order, ["clear", "on", "ontable", "holding", "at"]);
    }

    #[test]
    fn all_predicates_over_colours() {
        let colours: Vec<String> = ["red", "blue", "green"].map(String::from).to_vec();
        let all = Predicate::all(&colours);
        // 3 unary kinds x 3 blocks + 3 x 2 ordered pairs.
        assert_eq!(all.len(), 9 + 6);
        assert!(all.contains(&Predicate::on("green", "red")));
        assert!(!all.contains(&Predicate::on("red", "red")));
    }
}
