//! `kind: http` targets: the user's application behind a URL. A request is the method, the
//! URL, the headers (whose `${VARIABLE}`s are read from the environment and never stored)
//! and a JSON body rendered from a template; the answer is the value at a path of the JSON
//! response, and so are the token counts and the cost when the application reports them.

use reqwest::header::{HeaderMap, HeaderName, HeaderValue};
use serde_json::Value;

use super::path::{JsonPath, as_text};
use crate::cases::Values;
use crate::cases::template::{MissingValue, Template};
use crate::llm::client::ApiKey;

/// An HTTP target as config.yaml describes it.
#[derive(Debug, Clone, PartialEq)]
pub struct HttpTarget {
    pub method: reqwest::Method,
    /// Its headers, in the order written.
    pub headers: Vec<HeaderTemplate>,
    /// The JSON body's template; `None`: no body.
    pub body: Option<BodyTemplate>,
    /// Where the answer's text is in the response.
    pub answer: JsonPath,
    pub input_tokens: Option<JsonPath>,
    pub output_tokens: Option<JsonPath>,
    /// Where the call's cost in USD is in the response.
    pub cost_usd: Option<JsonPath>,
}

/// What an HTTP target's response said: the answer, and what it reported of its usage.
#[derive(Debug, Clone, PartialEq)]
pub struct HttpAnswer {
    pub text: String,
    pub input_tokens: Option<u64>,
    pub output_tokens: Option<u64>,
    pub cost_usd: Option<f64>,
}

/// Why a response gave no answer, and whether asking again may mend it.
#[derive(Debug, Clone, PartialEq)]
pub struct Unanswered {
    pub detail: String,
    /// A body that is not JSON is what a gateway answers under load: asked again. A JSON
    /// body without the answer's path answers the same way again.
    pub retryable: bool,
}

impl HttpTarget {
    /// Reads a successful response `body`: the text at `answer`, and the usage at the other
    /// paths; an error naming the path and the body's first 200 bytes when there is none.
    pub fn read(&self, body: &[u8]) -> Result<HttpAnswer, Unanswered> {
        let document: Value = serde_json::from_slice(body).map_err(|e| Unanswered {
            detail: format!(
                "its response is not JSON ({e}), so `answer: {}` finds nothing in it; it begins: {}",
                self.answer,
                first_bytes(body)
            ),
            retryable: true,
        })?;
        let text = self
            .answer
            .find(&document)
            .map(as_text)
            .ok_or_else(|| Unanswered {
                detail: format!(
                    "`answer: {}` finds nothing in its response; it begins: {}",
                    self.answer,
                    first_bytes(body)
                ),
                retryable: false,
            })?;
        let count = |path: &Option<JsonPath>| path.as_ref().and_then(|p| p.find_count(&document));
        Ok(HttpAnswer {
            text,
            input_tokens: count(&self.input_tokens),
            output_tokens: count(&self.output_tokens),
            cost_usd: self.cost_usd.as_ref().and_then(|p| p.find_usd(&document)),
        })
    }

    /// The variables its headers name, each once, in order.
    pub fn variables(&self) -> Vec<&str> {
        let mut names: Vec<&str> = Vec::new();
        for header in &self.headers {
            for name in header.variables() {
                if !names.contains(&name) {
                    names.push(name);
                }
            }
        }
        names
    }
}

/// The first 200 bytes of a body, as text, for messages.
fn first_bytes(body: &[u8]) -> String {
    const SHOWN: usize = 200;
    let cut = body.len().min(SHOWN);
    let text = String::from_utf8_lossy(&body[..cut]);
    let ellipsis = if body.len() > SHOWN { "…" } else { "" };
    format!("`{}{ellipsis}`", text.trim_end())
}

/// One header: its name and its value's pieces, literal text and `${VARIABLE}`s.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HeaderTemplate {
    pub name: HeaderName,
    pieces: Vec<HeaderPiece>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum HeaderPiece {
    Text(String),
    Variable(String),
}

impl HeaderTemplate {
    /// Reads `name: value`, where `${NAME}` in the value names an environment variable.
    pub fn parse(name: &str, value: &str) -> Result<Self, String> {
        let header = HeaderName::from_bytes(name.as_bytes())
            .map_err(|_| format!("`{name}` is not a header name"))?;
        let mut pieces = Vec::new();
        let mut rest = value;
        while let Some(open) = rest.find("${") {
            if open > 0 {
                pieces.push(HeaderPiece::Text(rest[..open].to_owned()));
            }
            let after = &rest[open + 2..];
            let close = after.find('}').ok_or_else(|| {
                format!("header `{name}`: `${{` opens a variable that no `}}` closes")
            })?;
            let variable = after[..close].trim();
            let valid = !variable.is_empty()
                && !variable.starts_with(|c: char| c.is_ascii_digit())
                && variable
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || c == '_');
            if !valid {
                return Err(format!(
                    "header `{name}`: `${{{variable}}}` is not a variable name (letters, digits \
                     and `_`)"
                ));
            }
            pieces.push(HeaderPiece::Variable(variable.to_owned()));
            rest = &after[close + 1..];
        }
        if !rest.is_empty() {
            pieces.push(HeaderPiece::Text(rest.to_owned()));
        }
        if let [HeaderPiece::Text(text)] = pieces.as_slice() {
            HeaderValue::from_str(text)
                .map_err(|_| format!("header `{name}`: its value is not a header value"))?;
        }
        Ok(Self {
            name: header,
            pieces,
        })
    }

    /// The environment variables its value names.
    pub fn variables(&self) -> impl Iterator<Item = &str> {
        self.pieces.iter().filter_map(|p| match p {
            HeaderPiece::Variable(v) => Some(v.as_str()),
            HeaderPiece::Text(_) => None,
        })
    }

    /// Whether its value names a variable: then it carries a secret, and is left out of the
    /// cache key and of everything stored.
    pub fn is_secret(&self) -> bool {
        self.variables().next().is_some()
    }

    /// Its value as written, when it names no variable.
    pub fn literal(&self) -> Option<String> {
        match self.pieces.as_slice() {
            [] => Some(String::new()),
            [HeaderPiece::Text(text)] => Some(text.clone()),
            _ => None,
        }
    }
}

/// The headers of `target` with their variables read by `read`, the values of secret headers
/// remembered as keys (redacted from every message) and marked sensitive; the variables that
/// `read` had no value for.
pub fn resolve_headers(
    target: &HttpTarget,
    read: impl Fn(&str) -> Option<String>,
) -> (HeaderMap, Vec<String>) {
    let mut headers = HeaderMap::new();
    let mut missing = Vec::new();
    for header in &target.headers {
        let mut value = String::new();
        let mut complete = true;
        for piece in &header.pieces {
            match piece {
                HeaderPiece::Text(text) => value.push_str(text),
                HeaderPiece::Variable(name) => match read(name) {
                    Some(secret) => {
                        ApiKey::new(secret.clone());
                        value.push_str(&secret);
                    }
                    None => {
                        complete = false;
                        if !missing.contains(name) {
                            missing.push(name.clone());
                        }
                    }
                },
            }
        }
        if !complete {
            continue;
        }
        // A variable whose value cannot be a header value is as good as missing.
        match HeaderValue::from_str(&value) {
            Ok(mut value) => {
                value.set_sensitive(header.is_secret());
                headers.append(header.name.clone(), value);
            }
            Err(_) => missing.extend(header.variables().map(str::to_owned)),
        }
    }
    (headers, missing)
}

/// A JSON body template: the JSON as written, each string in it a `{{name}}` template. A
/// string that is one name and nothing else (`"{{messages}}"`) becomes that value as it is
/// (an array, an object, a number); any other string is rendered as text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BodyTemplate {
    Literal(Value),
    Text(Template),
    Array(Vec<BodyTemplate>),
    Object(Vec<(String, BodyTemplate)>),
}

impl BodyTemplate {
    /// The template of `body` as config.yaml writes it. A string that holds a JSON object or
    /// array is read as that JSON (`body: '{"q": "{{prompt}}"}'`).
    pub fn parse(body: &Value) -> Self {
        if let Value::String(text) = body
            && let Ok(json @ (Value::Object(_) | Value::Array(_))) =
                serde_json::from_str::<Value>(text)
        {
            return Self::parse(&json);
        }
        Self::node(body)
    }

    fn node(value: &Value) -> Self {
        match value {
            Value::String(text) => {
                let template = Template::parse(text);
                if template.is_literal() {
                    // Renders as itself, but for `\{{`, written `{{`.
                    let text = template.render(&Values::new()).unwrap_or_default();
                    Self::Literal(Value::String(text))
                } else {
                    Self::Text(template)
                }
            }
            Value::Array(items) => Self::Array(items.iter().map(Self::node).collect()),
            Value::Object(map) => Self::Object(
                map.iter()
                    .map(|(key, value)| (key.clone(), Self::node(value)))
                    .collect(),
            ),
            other => Self::Literal(other.clone()),
        }
    }

    /// The body for one call, its names filled from `values`.
    pub fn render(&self, values: &Values) -> Result<Value, MissingValue> {
        Ok(match self {
            Self::Literal(value) => value.clone(),
            Self::Text(template) => match template.lone_value(values) {
                Some(value) => value?.clone(),
                None => Value::String(template.render(values)?),
            },
            Self::Array(items) => Value::Array(
                items
                    .iter()
                    .map(|item| item.render(values))
                    .collect::<Result<_, _>>()?,
            ),
            Self::Object(fields) => Value::Object(
                fields
                    .iter()
                    .map(|(key, value)| Ok((key.clone(), value.render(values)?)))
                    .collect::<Result<_, MissingValue>>()?,
            ),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn target(answer: &str) -> HttpTarget {
        HttpTarget {
            method: reqwest::Method::POST,
            headers: vec![
                HeaderTemplate::parse("Authorization", "Bearer ${APP_TOKEN}").unwrap(),
                HeaderTemplate::parse("X-Tenant", "acme").unwrap(),
            ],
            body: None,
            answer: JsonPath::parse(answer).unwrap(),
            input_tokens: Some(JsonPath::parse("usage.in").unwrap()),
            output_tokens: Some(JsonPath::parse("/usage/out").unwrap()),
            cost_usd: Some(JsonPath::parse("usage.cost").unwrap()),
        }
    }

    #[test]
    fn a_body_renders_lone_names_as_values_and_other_strings_as_text() {
        let yaml_body = json!({
            "query": "{{prompt}}",
            "history": "{{messages}}",
            "case": "{{ values }}",
            "n": "{{n}}",
            "label": "case {{n}}: {{item.q}}",
            "fixed": [1, true, null, "plain \\{{x}}"],
        });
        let body = BodyTemplate::parse(&yaml_body);
        let values = json!({
            "prompt": "Why?",
            "messages": [{"role": "user", "content": "Why?"}],
            "values": {"n": 3},
            "n": 3,
            "item": {"q": "q1"},
        });
        let rendered = body.render(values.as_object().unwrap()).unwrap();
        assert_eq!(
            rendered,
            json!({
                "query": "Why?",
                "history": [{"role": "user", "content": "Why?"}],
                "case": {"n": 3},
                "n": 3,
                "label": "case 3: q1",
                "fixed": [1, true, null, "plain {{x}}"],
            })
        );
        // The keys keep the order written.
        let keys: Vec<&String> = rendered.as_object().unwrap().keys().collect();
        assert_eq!(keys, ["query", "history", "case", "n", "label", "fixed"]);
        // A missing value is named.
        let e = BodyTemplate::parse(&json!({"q": "{{question}}"}))
            .render(&Values::new())
            .unwrap_err();
        assert_eq!(e.name, "question");
        // A body written as a JSON string is that JSON.
        let from_text = BodyTemplate::parse(&json!(r#"{"q": "{{prompt}}"}"#));
        assert_eq!(
            from_text.render(values.as_object().unwrap()).unwrap(),
            json!({"q": "Why?"})
        );
    }

    #[test]
    fn the_answer_and_usage_come_from_their_paths() {
        let body = br#"{"output": {"text": "Paris"}, "usage": {"in": 12, "out": 3, "cost": 0.01}}"#;
        let answer = target("output.text").read(body).unwrap();
        assert_eq!(
            answer,
            HttpAnswer {
                text: "Paris".into(),
                input_tokens: Some(12),
                output_tokens: Some(3),
                cost_usd: Some(0.01),
            }
        );
        // Usage not reported: none, to be estimated.
        let bare = target("/output/text")
            .read(br#"{"output": {"text": "Paris"}}"#)
            .unwrap();
        assert_eq!((bare.input_tokens, bare.cost_usd), (None, None));
    }

    #[test]
    fn no_json_or_nothing_at_the_path_is_an_error_naming_the_path_and_the_first_200_bytes() {
        let html = format!("<html>{}</html>", "x".repeat(400));
        let e = target("output.text").read(html.as_bytes()).unwrap_err();
        assert!(e.retryable);
        assert!(e.detail.contains("not JSON"), "{}", e.detail);
        assert!(e.detail.contains("`answer: output.text`"), "{}", e.detail);
        let shown = format!("`{}…`", &html[..200]);
        assert!(e.detail.ends_with(&shown), "{}", e.detail);
        let e = target("output.text")
            .read(br#"{"result": "Paris"}"#)
            .unwrap_err();
        assert!(!e.retryable);
        assert_eq!(
            e.detail,
            "`answer: output.text` finds nothing in its response; it begins: `{\"result\": \"Paris\"}`"
        );
    }

    #[test]
    fn headers_naming_variables_are_secret_and_resolved_from_the_environment() {
        let t = target("a");
        assert_eq!(t.variables(), ["APP_TOKEN"]);
        assert!(t.headers[0].is_secret() && !t.headers[1].is_secret());
        assert_eq!(t.headers[1].literal().as_deref(), Some("acme"));
        let (headers, missing) = resolve_headers(&t, |_| None);
        assert_eq!(missing, ["APP_TOKEN"]);
        assert!(headers.get("authorization").is_none());
        let (headers, missing) = resolve_headers(&t, |v| {
            (v == "APP_TOKEN").then(|| "tok-SECRET-123".to_owned())
        });
        assert!(missing.is_empty());
        let auth = &headers["authorization"];
        assert_eq!(auth.to_str().unwrap(), "Bearer tok-SECRET-123");
        assert!(auth.is_sensitive());
        assert!(!format!("{headers:?}").contains("SECRET"));
        // The secret is redacted from any message.
        assert_eq!(
            crate::llm::client::redact("echo: tok-SECRET-123"),
            "echo: ***"
        );
        for (name, value) in [
            ("Bad Name", "x"),
            ("A", "${}"),
            ("A", "${1X}"),
            ("A", "${X"),
        ] {
            assert!(
                HeaderTemplate::parse(name, value).is_err(),
                "{name}: {value}"
            );
        }
    }
}
