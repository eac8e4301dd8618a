//! The canonical form of a request and its cache key.
//!
//! The key is the sha256 of a compact JSON with sorted keys holding everything that changes the
//! answer (provider, endpoint, model, system prompt, messages with images as their hashes,
//! sampling parameters, repeat index) and nothing else: no keys, timeouts or retry settings.

use serde::Serialize;

use super::{ChatRequest, Part};

/// Version of the canonical form; bump it only if the form changes meaning.
const CANONICAL_VERSION: u32 = 1;

/// A request's cache key: the sha256 hex of its canonical JSON. The JSON itself is made
/// again ([`CanonicalRequest::json`]) only when a call is stored: a plan of 400,000 calls
/// would otherwise hold 400,000 of them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CanonicalRequest {
    pub key: CacheKey,
}

/// A cache key: the 64 lowercase hex digits of a sha256, held inline (a plan holds one per
/// call: as a `String` each was 88 bytes and an allocation).
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct CacheKey([u8; 64]);

impl CacheKey {
    /// The key of the hex text `hex` (64 digits).
    fn of_digest(digest: &[u8]) -> Self {
        let mut hex = [0u8; 64];
        // 32 bytes make 64 hex digits: the buffer is exactly their size.
        let _ = hex::encode_to_slice(digest, &mut hex);
        Self(hex)
    }

    /// The key as text.
    pub(crate) fn as_str(&self) -> &str {
        // Always ASCII hex digits: written only by `of_digest`.
        std::str::from_utf8(&self.0).unwrap_or_default()
    }
}

impl std::ops::Deref for CacheKey {
    type Target = str;

    fn deref(&self) -> &str {
        self.as_str()
    }
}

impl std::fmt::Display for CacheKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl std::fmt::Debug for CacheKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{:?}", self.as_str())
    }
}

impl PartialEq<str> for CacheKey {
    fn eq(&self, other: &str) -> bool {
        self.as_str() == other
    }
}

impl PartialEq<String> for CacheKey {
    fn eq(&self, other: &String) -> bool {
        self.as_str() == other
    }
}

impl CanonicalRequest {
    /// The key of `request` sent to `provider` at `endpoint`, for sample `repeat` (each
    /// repeat is a distinct cache entry): the JSON is hashed as it is written.
    pub(crate) fn new(provider: &str, endpoint: &str, request: &ChatRequest, repeat: u32) -> Self {
        use sha2::Digest as _;
        let mut hasher = Hashing(sha2::Sha256::new());
        serde_json::to_writer(&mut hasher, &canon(provider, endpoint, request, repeat))
            .expect("a canonical request always serializes");
        Self {
            key: CacheKey::of_digest(&hasher.0.finalize()),
        }
    }

    /// The key of a canonical JSON made elsewhere (a target's: [`super::target::App`]).
    pub(crate) fn of_json(json: &str) -> Self {
        use sha2::Digest as _;
        Self {
            key: CacheKey::of_digest(&sha2::Sha256::digest(json.as_bytes())),
        }
    }

    /// The canonical JSON of `request` (what [`CanonicalRequest::new`] hashes), stored with
    /// the call under its key.
    pub(crate) fn json(
        provider: &str,
        endpoint: &str,
        request: &ChatRequest,
        repeat: u32,
    ) -> String {
        serde_json::to_string(&canon(provider, endpoint, request, repeat))
            .expect("a canonical request always serializes")
    }
}

/// Writes into a hasher.
struct Hashing(sha2::Sha256);

impl std::io::Write for Hashing {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        sha2::Digest::update(&mut self.0, bytes);
        Ok(bytes.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// The canonical form of a request, borrowing from it.
fn canon<'a>(
    provider: &'a str,
    endpoint: &'a str,
    request: &'a ChatRequest,
    repeat: u32,
) -> Canon<'a> {
    let params = &request.params;
    Canon {
        endpoint,
        messages: request
            .messages
            .iter()
            .map(|m| CanonMessage {
                content: m
                    .parts
                    .iter()
                    .map(|p| match p {
                        Part::Text(text) => CanonPart::Text { text, kind: "text" },
                        Part::Image(i) => CanonPart::Image {
                            media_type: &i.media_type,
                            sha256: &i.sha256,
                            kind: "image",
                        },
                    })
                    .collect(),
                role: m.role.as_str(),
            })
            .collect(),
        model: &request.model,
        params: CanonParams {
            max_tokens: params.max_tokens,
            seed: params.seed,
            temperature: params.temperature,
            top_p: params.top_p,
        },
        provider,
        repeat,
        schema: request.schema.as_ref().map(|s| CanonSchema {
            name: &s.name,
            schema: sorted(&s.schema),
        }),
        system: request.system.as_deref(),
        tools: request.tools.as_ref().map(|t| t.canonical()),
        v: CANONICAL_VERSION,
    }
}

// The canonical form as structs whose fields are declared in sorted order, so serde_json
// writes keys sorted without building maps.

#[derive(Serialize)]
struct Canon<'a> {
    endpoint: &'a str,
    messages: Vec<CanonMessage<'a>>,
    model: &'a str,
    params: CanonParams,
    provider: &'a str,
    repeat: u32,
    /// Absent without a schema, so keys of requests without one are what they always were.
    #[serde(skip_serializing_if = "Option::is_none")]
    schema: Option<CanonSchema<'a>>,
    system: Option<&'a str>,
    /// Absent without tools, so keys of requests without them are what they always were.
    #[serde(skip_serializing_if = "Option::is_none")]
    tools: Option<serde_json::Value>,
    v: u32,
}

#[derive(Serialize)]
struct CanonSchema<'a> {
    name: &'a str,
    schema: serde_json::Value,
}

/// `value` with the keys of every object in sorted order (maps keep insertion order here).
pub(crate) fn sorted(value: &serde_json::Value) -> serde_json::Value {
    use serde_json::Value;
    match value {
        Value::Object(map) => {
            let mut keys: Vec<&String> = map.keys().collect();
            keys.sort();
            Value::Object(
                keys.into_iter()
                    .map(|k| (k.clone(), sorted(&map[k])))
                    .collect(),
            )
        }
        Value::Array(items) => Value::Array(items.iter().map(sorted).collect()),
        other => other.clone(),
    }
}

#[derive(Serialize)]
struct CanonMessage<'a> {
    content: Vec<CanonPart<'a>>,
    role: &'static str,
}

#[derive(Serialize)]
#[serde(untagged)]
enum CanonPart<'a> {
    Text {
        text: &'a str,
        #[serde(rename = "type")]
        kind: &'static str,
    },
    Image {
        media_type: &'a str,
        sha256: &'a str,
        #[serde(rename = "type")]
        kind: &'static str,
    },
}

#[derive(Serialize)]
struct CanonParams {
    #[serde(skip_serializing_if = "Option::is_none")]
    max_tokens: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    seed: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    temperature: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    top_p: Option<f64>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::llm::{Image, Message, SamplingParams};

    fn request(text: &str) -> ChatRequest {
        ChatRequest {
            tools: None,
            model: "gpt-4o".into(),
            schema: None,
            system: None,
            messages: vec![Message::user(text)].into(),
            params: SamplingParams {
                temperature: Some(0.0),
                ..Default::default()
            }
            .into(),
        }
    }

    #[test]
    fn canonical_json_is_sorted_and_compact() {
        let c = CanonicalRequest::new("openai", "https://api.openai.com/v1", &request("hi"), 0);
        let json = CanonicalRequest::json("openai", "https://api.openai.com/v1", &request("hi"), 0);
        assert_eq!(
            json,
            r#"{"endpoint":"https://api.openai.com/v1","messages":[{"content":[{"text":"hi","type":"text"}],"role":"user"}],"model":"gpt-4o","params":{"temperature":0.0},"provider":"openai","repeat":0,"system":null,"v":1}"#
        );
        assert_eq!(c.key, crate::hash::sha256_hex(json.as_bytes()));
    }

    #[test]
    fn all_parameters_and_images_keep_sorted_keys() {
        let mut r = request("hi");
        r.system = Some("be brief".into());
        r.params = SamplingParams {
            temperature: Some(0.5),
            top_p: Some(0.9),
            max_tokens: Some(10),
            seed: Some(7),
        }
        .into();
        std::sync::Arc::get_mut(&mut r.messages).unwrap()[0]
            .parts
            .push(Part::Image(Image::new("image/png", vec![1])));
        let json = CanonicalRequest::json("p", "u", &r, 2);
        // The same JSON a sorted map would give.
        let value: serde_json::Value = serde_json::from_str(&json).unwrap();
        assert_eq!(value.to_string(), json);
        assert!(
            json.contains(r#""params":{"max_tokens":10,"seed":7,"temperature":0.5,"top_p":0.9}"#)
        );
    }

    #[test]
    fn everything_that_changes_the_answer_changes_the_key() {
        let base = CanonicalRequest::new("openai", "u", &request("hi"), 0).key;
        assert_eq!(
            base,
            CanonicalRequest::new("openai", "u", &request("hi"), 0).key
        );
        assert_ne!(
            base,
            CanonicalRequest::new("openai", "u", &request("hi!"), 0).key
        );
        assert_ne!(
            base,
            CanonicalRequest::new("openai", "u", &request("hi"), 1).key
        );
        assert_ne!(
            base,
            CanonicalRequest::new("ollama", "u", &request("hi"), 0).key
        );
        assert_ne!(
            base,
            CanonicalRequest::new("openai", "v", &request("hi"), 0).key
        );
        let mut hot = request("hi");
        std::sync::Arc::make_mut(&mut hot.params).temperature = Some(1.0);
        assert_ne!(base, CanonicalRequest::new("openai", "u", &hot, 0).key);
    }

    #[test]
    fn tools_and_their_exchange_are_in_the_key() {
        let plain = request("weather?");
        let base = CanonicalRequest::new("openai", "u", &plain, 0).key;
        let mut offered = plain.clone();
        offered.tools = Some(Box::new(crate::llm::tools::ToolUse {
            steps: Vec::new(),
            ..crate::llm::tools::weather_use()
        }));
        let with_tools = CanonicalRequest::new("openai", "u", &offered, 0).key;
        assert_ne!(base, with_tools, "tools offered: another key");
        let mut stepped = plain.clone();
        stepped.tools = Some(Box::new(crate::llm::tools::weather_use()));
        assert_ne!(
            with_tools,
            CanonicalRequest::new("openai", "u", &stepped, 0).key
        );
        // No tools: the JSON has no `tools` key, as before.
        assert!(!CanonicalRequest::json("openai", "u", &plain, 0).contains("tools"));
    }

    #[test]
    fn images_enter_by_their_hash() {
        let mut with_image = request("what is this?");
        std::sync::Arc::get_mut(&mut with_image.messages).unwrap()[0]
            .parts
            .push(Part::Image(Image::new("image/png", vec![1, 2, 3])));
        let json = CanonicalRequest::json("openai", "u", &with_image, 0);
        assert!(json.contains(&crate::hash::sha256_hex(&[1, 2, 3])));
        assert!(!json.contains("AQID"), "no base64 bytes in the key");
    }
}
