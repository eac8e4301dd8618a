//! The canonical form of a request and its cache key.
//!
//! The key is the sha256 of a compact JSON with sorted keys holding everything that changes the
//! answer (provider, endpoint, model, system prompt, messages with images as their hashes,
//! sampling parameters, repeat index) and nothing else: no keys, timeouts or retry settings.

use serde_json::{Value, json};

use super::{ChatRequest, Part};

/// Version of the canonical form; bump it only if the form changes meaning.
const CANONICAL_VERSION: u32 = 1;

/// A request's canonical JSON and its key (sha256 hex of that JSON).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CanonicalRequest {
    pub json: String,
    pub key: String,
}

impl CanonicalRequest {
    /// Builds the canonical form of `request` sent to `provider` at `endpoint`, for sample
    /// `repeat` (each repeat is a distinct cache entry).
    pub fn new(provider: &str, endpoint: &str, request: &ChatRequest, repeat: u32) -> Self {
        let messages: Vec<Value> = request
            .messages
            .iter()
            .map(|m| {
                let parts: Vec<Value> = m
                    .parts
                    .iter()
                    .map(|p| match p {
                        Part::Text(t) => json!({"type": "text", "text": t}),
                        Part::Image(i) => {
                            json!({"type": "image", "media_type": i.media_type, "sha256": i.sha256})
                        }
                    })
                    .collect();
                json!({"role": m.role.as_str(), "content": parts})
            })
            .collect();
        // serde_json's map keeps keys sorted, so `to_string` is canonical.
        let value = json!({
            "v": CANONICAL_VERSION,
            "provider": provider,
            "endpoint": endpoint,
            "model": request.model,
            "system": request.system,
            "messages": messages,
            "params": request.params,
            "repeat": repeat,
        });
        let json = value.to_string();
        let key = crate::store::sha256_hex(json.as_bytes());
        Self { json, key }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::llm::{Image, Message, SamplingParams};

    fn request(text: &str) -> ChatRequest {
        ChatRequest {
            model: "gpt-4o".into(),
            system: None,
            messages: vec![Message::user(text)],
            params: SamplingParams {
                temperature: Some(0.0),
                ..Default::default()
            },
        }
    }

    #[test]
    fn canonical_json_is_sorted_and_compact() {
        let c = CanonicalRequest::new("openai", "https://api.openai.com/v1", &request("hi"), 0);
        assert_eq!(
            c.json,
            r#"{"endpoint":"https://api.openai.com/v1","messages":[{"content":[{"text":"hi","type":"text"}],"role":"user"}],"model":"gpt-4o","params":{"temperature":0.0},"provider":"openai","repeat":0,"system":null,"v":1}"#
        );
        assert_eq!(c.key, crate::store::sha256_hex(c.json.as_bytes()));
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
        hot.params.temperature = Some(1.0);
        assert_ne!(base, CanonicalRequest::new("openai", "u", &hot, 0).key);
    }

    #[test]
    fn images_enter_by_their_hash() {
        let mut with_image = request("what is this?");
        with_image.messages[0]
            .parts
            .push(Part::Image(Image::new("image/png", vec![1, 2, 3])));
        let c = CanonicalRequest::new("openai", "u", &with_image, 0);
        assert!(c.json.contains(&crate::store::sha256_hex(&[1, 2, 3])));
        assert!(!c.json.contains("AQID"), "no base64 bytes in the key");
    }
}
