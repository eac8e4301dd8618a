//! Blocks-world predicates in the specification's form: `clear(red:block)`,
//! `on(red:block,blue:block)`, `ontable(red:block)`, `holding(red:block)`.

use std::fmt;
use std::str::FromStr;

/// A ground predicate over coloured blocks.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Predicate {
    /// Nothing is on the block (and it is not held).
    Clear(String),
    /// The first block sits directly on the second.
    On(String, String),
    /// The block sits on the table.
    OnTable(String),
    /// The arm holds the block.
    Holding(String),
}

impl Predicate {
    /// The predicate's type (`clear`, `on`, `ontable`, `holding`), for per-type metrics.
    pub fn kind(&self) -> &'static str {
        match self {
            Self::Clear(_) => "clear",
            Self::On(..) => "on",
            Self::OnTable(_) => "ontable",
            Self::Holding(_) => "holding",
        }
    }

    /// Every predicate over blocks of `colours`, in a stable order.
    pub fn all(colours: &[String]) -> Vec<Self> {
        let mut all = Vec::new();
        for c in colours {
            all.push(Self::Clear(c.clone()));
            all.push(Self::OnTable(c.clone()));
            all.push(Self::Holding(c.clone()));
        }
        for a in colours {
            for b in colours.iter().filter(|b| *b != a) {
                all.push(Self::On(a.clone(), b.clone()));
            }
        }
        all
    }
}

impl fmt::Display for Predicate {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Clear(c) => write!(f, "clear({c}:block)"),
            Self::On(a, b) => write!(f, "on({a}:block,{b}:block)"),
            Self::OnTable(c) => write!(f, "ontable({c}:block)"),
            Self::Holding(c) => write!(f, "holding({c}:block)"),
        }
    }
}

impl FromStr for Predicate {
    type Err = String;

    /// Parses the specification's form; spaces and case are forgiven, `:block` is optional.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let compact: String = s
            .chars()
            .filter(|c| !c.is_whitespace())
            .collect::<String>()
            .to_ascii_lowercase();
        let bad = || {
            format!("`{s}` is not a predicate like clear(red:block) or on(red:block,blue:block)")
        };
        let (name, rest) = compact.split_once('(').ok_or_else(bad)?;
        let args = rest.strip_suffix(')').ok_or_else(bad)?;
        let block = |a: &str| -> Result<String, String> {
            let colour = a.strip_suffix(":block").unwrap_or(a);
            if colour.is_empty()
                || !colour
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
            {
                return Err(bad());
            }
            Ok(colour.to_owned())
        };
        let parts: Vec<&str> = args.split(',').collect();
        match (name, parts.as_slice()) {
            ("clear", [a]) => Ok(Self::Clear(block(a)?)),
            ("ontable", [a]) => Ok(Self::OnTable(block(a)?)),
            ("holding", [a]) => Ok(Self::Holding(block(a)?)),
            ("on", [a, b]) => Ok(Self::On(block(a)?, block(b)?)),
            _ => Err(bad()),
        }
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
        ] {
            let p: Predicate = text.parse().unwrap();
            assert_eq!(p.to_string(), text);
        }
        let p: Predicate = " On( Red:block , blue ) ".parse().unwrap();
        assert_eq!(p, Predicate::On("red".into(), "blue".into()));
        assert_eq!(p.kind(), "on");
        for bad in [
            "clear(red:block",
            "on(red:block)",
            "above(red:block,blue:block)",
            "clear()",
            "clear(a;b)",
        ] {
            assert!(bad.parse::<Predicate>().is_err(), "{bad}");
        }
    }

    #[test]
    fn all_predicates_over_colours() {
        let colours: Vec<String> = ["red", "blue", "green"].map(String::from).to_vec();
        let all = Predicate::all(&colours);
        // 3 unary kinds x 3 blocks + 3 x 2 ordered pairs.
        assert_eq!(all.len(), 9 + 6);
        assert!(all.contains(&Predicate::On("green".into(), "red".into())));
        assert!(!all.contains(&Predicate::On("red".into(), "red".into())));
    }
}
