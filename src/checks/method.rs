//! The names of the check methods: parsed from what a file writes (any case, `_` or `-`, the
//! aliases of older files and promptfoo's names where they mean the same), and what each
//! method accepts.

use std::fmt;
use std::str::FromStr;

/// A check method, without what it needs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Method {
    /// The answer equals the value after trimming surrounding white space.
    Exact,
    /// The answer contains the value.
    Contains,
    /// The answer contains the value, ignoring case.
    IContains,
    /// The answer matches the value as a regular expression.
    Regex,
    /// The answer is valid JSON (a surrounding ```json fence is allowed).
    JsonValid,
    /// The answer is JSON equal to the value's JSON.
    JsonEquals,
    /// A judge model scores the answer against a rubric (1-5).
    Judge,
    /// The answer does not contain the value.
    NotContains,
    /// The answer does not contain the value, ignoring case.
    NotIContains,
    /// The answer starts with one of the values.
    StartsWith,
    /// The answer ends with the value.
    EndsWith,
    /// The answer contains at least one of the values.
    ContainsAny,
    /// The answer contains every one of the values.
    ContainsAll,
    /// `contains-any`, ignoring case.
    IContainsAny,
    /// `contains-all`, ignoring case.
    IContainsAll,
    /// The answer does not match the value as a regular expression.
    NotRegex,
    /// The answer is JSON valid against the value, a JSON Schema (draft 2020-12).
    JsonSchema,
    /// The answer's normalised Levenshtein similarity to the value is at least a threshold.
    Similar,
    /// The call took at most the value, in milliseconds.
    Latency,
    /// The call cost at most the value, in USD.
    Cost,
    /// The answer used at most the value in output tokens.
    Tokens,
    /// A command grades the answer: JSON in on stdin, a verdict out on stdout.
    Script,
    /// The tool loop called the value, a tool's name (with `arguments:` a JSON subset).
    ToolCalled,
    /// The tool loop never called the value, a tool's name.
    ToolNotCalled,
    /// The tool loop called the value's tools, in that order, and no other.
    ToolSequence,
    /// The tool loop made at most the value in calls of the model.
    Steps,
}

/// Every method, in the order messages list them (the seed's first).
pub const METHODS: [Method; 26] = [
    Method::Exact,
    Method::Contains,
    Method::IContains,
    Method::Regex,
    Method::JsonValid,
    Method::JsonEquals,
    Method::Judge,
    Method::NotContains,
    Method::NotIContains,
    Method::StartsWith,
    Method::EndsWith,
    Method::ContainsAny,
    Method::ContainsAll,
    Method::IContainsAny,
    Method::IContainsAll,
    Method::NotRegex,
    Method::JsonSchema,
    Method::Similar,
    Method::Latency,
    Method::Cost,
    Method::Tokens,
    Method::Script,
    Method::ToolCalled,
    Method::ToolNotCalled,
    Method::ToolSequence,
    Method::Steps,
];

/// The methods' names, for messages: `exact, contains, …`.
pub(crate) fn method_names() -> String {
    METHODS.map(Method::name).join(", ")
}

impl Method {
    /// The method's name as stored with results.
    pub(crate) fn name(self) -> &'static str {
        match self {
            Self::Exact => "exact",
            Self::Contains => "contains",
            Self::IContains => "icontains",
            Self::Regex => "regex",
            Self::JsonValid => "json-valid",
            Self::JsonEquals => "json-equals",
            Self::Judge => "judge",
            Self::NotContains => "not-contains",
            Self::NotIContains => "not-icontains",
            Self::StartsWith => "starts-with",
            Self::EndsWith => "ends-with",
            Self::ContainsAny => "contains-any",
            Self::ContainsAll => "contains-all",
            Self::IContainsAny => "icontains-any",
            Self::IContainsAll => "icontains-all",
            Self::NotRegex => "not-regex",
            Self::JsonSchema => "json-schema",
            Self::Similar => "similar",
            Self::Latency => "latency",
            Self::Cost => "cost",
            Self::Tokens => "tokens",
            Self::Script => "script",
            Self::ToolCalled => "tool-called",
            Self::ToolNotCalled => "tool-not-called",
            Self::ToolSequence => "tool-sequence",
            Self::Steps => "steps",
        }
    }

    /// Whether the value is a list (a single text counts as a list of one).
    pub(crate) fn takes_list(self) -> bool {
        matches!(
            self,
            Self::StartsWith
                | Self::ContainsAny
                | Self::ContainsAll
                | Self::IContainsAny
                | Self::IContainsAll
                | Self::ToolSequence
        )
    }

    /// Whether it grades a tool loop (the benchmark must declare `tools:`).
    pub(crate) fn grades_tools(self) -> bool {
        matches!(
            self,
            Self::ToolCalled | Self::ToolNotCalled | Self::ToolSequence | Self::Steps
        )
    }

    /// Whether `ignore_case` applies.
    pub(crate) fn takes_ignore_case(self) -> bool {
        matches!(
            self,
            Self::Exact
                | Self::Contains
                | Self::NotContains
                | Self::StartsWith
                | Self::EndsWith
                | Self::ContainsAny
                | Self::ContainsAll
                | Self::Similar
        )
    }

    /// Whether the method ignores case whatever `ignore_case` says (its name has an `i`).
    pub(crate) fn always_ignores_case(self) -> bool {
        matches!(
            self,
            Self::IContains | Self::NotIContains | Self::IContainsAny | Self::IContainsAll
        )
    }

    /// Whether a check of this method may go without a value.
    pub(crate) fn value_optional(self) -> bool {
        matches!(self, Self::JsonValid | Self::Judge | Self::Script)
    }
}

impl fmt::Display for Method {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Method {
    type Err = String;

    /// A method by name: any case, `_` as `-`, and the aliases `is-json`, `llm-rubric` and
    /// promptfoo's `equals`. promptfoo's code asserts (`javascript`, `python`) are refused
    /// with the way to write them here.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let normal = s.trim().to_ascii_lowercase().replace('_', "-");
        if let Some(method) = METHODS.iter().find(|m| m.name() == normal) {
            return Ok(*method);
        }
        Ok(match normal.as_str() {
            "is-json" => Self::JsonValid,
            "llm-rubric" => Self::Judge,
            "equals" => Self::Exact,
            "is-valid-json-schema" | "json-schema-valid" => Self::JsonSchema,
            "javascript" | "python" | "py" | "js" => {
                return Err(format!(
                    "method `{s}` runs code inside promptfoo; here a check in code is a command: \
                     use `method: script` with `run: \"python3 grade.py\"` (it reads the answer \
                     as JSON on stdin and prints {{\"pass\": true|false}})"
                ));
            }
            _ => {
                let names = METHODS.map(Method::name);
                let suggestion = crate::yaml::closest(s, &names)
                    .map(|m| format!(" did you mean `{m}`?"))
                    .unwrap_or_default();
                return Err(format!(
                    "unknown method `{s}`;{suggestion} valid methods: {}",
                    method_names()
                ));
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_parse_in_any_case_with_underscores_and_aliases() {
        for (written, want) in [
            ("exact", Method::Exact),
            (" Exact ", Method::Exact),
            ("equals", Method::Exact),
            ("JSON_VALID", Method::JsonValid),
            ("is-json", Method::JsonValid),
            ("is_json", Method::JsonValid),
            ("llm-rubric", Method::Judge),
            ("not_contains", Method::NotContains),
            ("Starts-With", Method::StartsWith),
            ("icontains-all", Method::IContainsAll),
            ("json-schema", Method::JsonSchema),
            ("script", Method::Script),
        ] {
            assert_eq!(written.parse::<Method>(), Ok(want), "{written}");
        }
        // Every name parses back to its method.
        for m in METHODS {
            assert_eq!(m.name().parse::<Method>(), Ok(m));
        }
    }

    #[test]
    fn unknown_and_code_methods_are_refused_with_the_way_out() {
        let e = "fuzzy".parse::<Method>().unwrap_err();
        // The seed's methods come first, as its messages listed them.
        assert!(
            e.starts_with(
                "unknown method `fuzzy`; valid methods: exact, contains, icontains, regex, \
                 json-valid, json-equals, judge, not-contains"
            ),
            "{e}"
        );
        let e = "javascript".parse::<Method>().unwrap_err();
        assert!(e.contains("use `method: script`"), "{e}");
        let e = "Python".parse::<Method>().unwrap_err();
        assert!(e.contains("use `method: script`"), "{e}");
    }
}
