//! Targets: the user's own application evaluated in place of a model API, as a provider of
//! `kind: http` (a URL, a body template, a path to the answer) or `kind: exec` (a command
//! reading JSON on stdin). A target's model is `<provider>:default`, and its calls go
//! through the dispatcher like any other: cached, paced, budgeted, retried and sharded.
//!
//! Its cache key is what it is sent, less its secrets: for HTTP, the method, the URL, the
//! headers that name no variable and the rendered body; for a command, the command and its
//! request. Both with the provider's name and the sample's index.

pub mod exec;
pub mod http;
pub mod path;

use std::fmt;
use std::sync::Arc;
use std::sync::atomic::AtomicBool;
use std::time::Duration;

use reqwest::header::HeaderMap;
use serde_json::{Value, json};

use crate::cases::Values;
use crate::llm::client::{ApiRequest, limits_of};
use crate::llm::{
    ChatRequest, ChatResponse, Endpoint, LlmClient, Part, ProviderError, Role, Usage,
};

/// Version of the targets' canonical form; bump it only if the form changes meaning.
const CANONICAL_VERSION: u32 = 1;

/// A target as config.yaml describes it.
#[derive(Debug, Clone, PartialEq)]
pub struct TargetSpec {
    pub sender: Sender,
    /// How long one call may take (`timeout_secs:`); `None`: the run's.
    pub timeout: Option<Duration>,
}

/// How a target is reached.
#[derive(Debug, Clone, PartialEq)]
pub enum Sender {
    Http(Box<http::HttpTarget>),
    Exec(exec::ExecTarget),
}

impl TargetSpec {
    /// Whether it is a command (`kind: exec`), run once a call.
    pub fn is_command(&self) -> bool {
        matches!(self.sender, Sender::Exec(_))
    }

    /// The environment variables its headers name (secrets, never stored).
    pub fn variables(&self) -> Vec<&str> {
        match &self.sender {
            Sender::Http(http) => http.variables(),
            Sender::Exec(_) => Vec::new(),
        }
    }

    /// Whether its calls may cost something a budget cannot bound without `max_cost_usd`: a
    /// command may report a cost, and so may an HTTP target with a cost path.
    pub fn may_cost(&self) -> bool {
        match &self.sender {
            Sender::Http(http) => http.cost_usd.is_some(),
            Sender::Exec(_) => true,
        }
    }
}

/// A target ready to call: its spec, and its headers with the variables they name read
/// from the environment. Never prints them.
pub struct App {
    /// The provider's name, for messages and keys.
    pub provider: String,
    pub spec: Arc<TargetSpec>,
    headers: HeaderMap,
    /// The variables its headers name that are not set.
    pub missing: Vec<String>,
}

impl fmt::Debug for App {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("App")
            .field("provider", &self.provider)
            .field("spec", &self.spec)
            .field("missing", &self.missing)
            .finish_non_exhaustive()
    }
}

/// One call to a target: the chat request, the model id and the case's values.
#[derive(Debug, Clone, Copy)]
pub struct AppRequest<'a> {
    pub chat: &'a ChatRequest,
    pub values: Option<&'a Values>,
}

impl App {
    /// Target `provider` of `spec`, its headers' variables read from the environment.
    pub fn resolve(provider: &str, spec: Arc<TargetSpec>) -> Self {
        let (headers, missing) = match &spec.sender {
            Sender::Http(target) => http::resolve_headers(target, |name| {
                std::env::var(name).ok().filter(|v| !v.trim().is_empty())
            }),
            Sender::Exec(_) => (HeaderMap::new(), Vec::new()),
        };
        Self {
            provider: provider.to_owned(),
            spec,
            headers,
            missing,
        }
    }

    /// The canonical JSON of a call to `endpoint` (what its cache key hashes): sorted keys,
    /// no secret.
    pub fn canonical_json(
        &self,
        endpoint: &Endpoint,
        request: AppRequest<'_>,
        repeat: u32,
    ) -> String {
        let (kind, sent) = match &self.spec.sender {
            Sender::Http(target) => {
                let headers: serde_json::Map<String, Value> = target
                    .headers
                    .iter()
                    .filter_map(|h| Some((h.name.to_string(), Value::String(h.literal()?))))
                    .collect();
                let body = match &target.body {
                    Some(template) => match template.render(&fields(request, Images::Hashed)) {
                        Ok(body) => body,
                        Err(missing) => json!({ "unrenderable": missing.to_string() }),
                    },
                    None => Value::Null,
                };
                let sent = json!({
                    "body": body,
                    "headers": headers,
                    "method": target.method.as_str(),
                    "url": endpoint.base_url,
                });
                ("http", sent)
            }
            Sender::Exec(target) => {
                let sent = json!({
                    "request": exec_request(request, Images::Hashed),
                    "run": target.program.run,
                });
                ("exec", sent)
            }
        };
        let canon = json!({
            "provider": self.provider,
            "repeat": repeat,
            "sent": sent,
            "target": kind,
            "v": CANONICAL_VERSION,
        });
        crate::llm::canonical::sorted(&canon).to_string()
    }

    /// Sends one call to the target at `endpoint`; `None` when `stop` was set while a command
    /// ran (it is killed: nothing is known of its answer). Any secret the target echoes back
    /// is scrubbed from the error.
    pub async fn send(
        &self,
        client: &LlmClient,
        endpoint: &Endpoint,
        request: AppRequest<'_>,
        stop: &Arc<AtomicBool>,
    ) -> Option<Result<ChatResponse, ProviderError>> {
        let result = match &self.spec.sender {
            Sender::Http(target) => Some(self.send_http(client, endpoint, target, request).await),
            Sender::Exec(_) => self.send_exec(client, request, stop).await,
        };
        result.map(|r| r.map_err(crate::llm::client::scrub_key))
    }

    /// Posts the rendered body to the URL, with the headers, and reads the answer.
    async fn send_http(
        &self,
        client: &LlmClient,
        endpoint: &Endpoint,
        target: &http::HttpTarget,
        request: AppRequest<'_>,
    ) -> Result<ChatResponse, ProviderError> {
        let body = match &target.body {
            Some(template) => {
                let body =
                    template
                        .render(&fields(request, Images::Inline))
                        .map_err(|missing| {
                            self.error(
                                format!(
                                    "{missing} in the `body:` of {} in config.yaml",
                                    self.provider
                                ),
                                false,
                            )
                        })?;
                // A `Value` always serializes.
                let bytes = serde_json::to_vec(&body).unwrap_or_default();
                Some(("application/json".to_owned(), bytes.into()))
            }
            None => None,
        };
        let response = client
            .send(
                endpoint,
                ApiRequest {
                    method: target.method.clone(),
                    url: endpoint.chat_url(),
                    headers: self.headers.clone(),
                    body,
                    timeout: self.spec.timeout,
                },
            )
            .await?;
        let limits = limits_of(&response);
        let bytes = client.read_body(endpoint, response).await?;
        let answer = target
            .read(&bytes)
            .map_err(|e| self.error(e.detail, e.retryable))?;
        let response = self.response(
            request,
            answer.text,
            answer.input_tokens,
            answer.output_tokens,
            answer.cost_usd,
        );
        Ok(response.with_limits(limits))
    }

    /// Runs the command on the request, on a thread of the blocking pool.
    async fn send_exec(
        &self,
        client: &LlmClient,
        request: AppRequest<'_>,
        stop: &Arc<AtomicBool>,
    ) -> Option<Result<ChatResponse, ProviderError>> {
        // A `Value` always serializes.
        let input = serde_json::to_vec(&exec_request(request, Images::Inline)).unwrap_or_default();
        let timeout = self.spec.timeout.unwrap_or_else(|| client.timeout());
        let (spec, stop) = (self.spec.clone(), stop.clone());
        let ran = tokio::task::spawn_blocking(move || match &spec.sender {
            Sender::Exec(target) => target.call(input, timeout, &stop),
            Sender::Http(_) => Some(Err("an HTTP target has no command to run".to_owned())),
        })
        .await;
        let answer = match ran {
            Ok(Some(answer)) => answer,
            Ok(None) => return None,
            Err(e) => Err(format!("its thread failed: {e}")),
        };
        Some(match answer {
            Ok(a) => {
                Ok(self.response(request, a.text, a.input_tokens, a.output_tokens, a.cost_usd))
            }
            Err(detail) => Err(self.error(detail, true)),
        })
    }

    /// The answer `text` with the usage reported; what was not reported is estimated, and
    /// flagged so.
    fn response(
        &self,
        request: AppRequest<'_>,
        text: String,
        input_tokens: Option<u64>,
        output_tokens: Option<u64>,
        cost_usd: Option<f64>,
    ) -> ChatResponse {
        let estimate = crate::llm::usage_or_estimate(None, request.chat, &text);
        let usage = Usage {
            input_tokens: input_tokens.unwrap_or(estimate.input_tokens),
            output_tokens: output_tokens.unwrap_or(estimate.output_tokens),
            estimated: input_tokens.is_none() || output_tokens.is_none(),
        };
        ChatResponse {
            text,
            usage,
            finish_reason: None,
            limits: None,
            cost_usd,
        }
    }

    /// A failure of this target.
    fn error(&self, detail: String, retryable: bool) -> ProviderError {
        ProviderError::Target {
            provider: self.provider.clone(),
            detail,
            retryable,
        }
    }
}

/// How images go into what a target is sent: their bytes (sent), or their hashes (keys).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Images {
    Inline,
    Hashed,
}

/// The conversation as targets get it: `[{"role": "user", "content": "…"}]`, the system
/// prompt first; a message with images has a list of parts as its content.
fn messages_json(chat: &ChatRequest, images: Images) -> Value {
    let system = chat
        .system
        .as_deref()
        .map(|s| json!({"role": Role::System.as_str(), "content": s}));
    let messages = chat.messages.iter().map(|m| {
        let content = match m.parts.as_slice() {
            parts if parts.iter().all(|p| matches!(p, Part::Text(_))) => Value::String(m.text()),
            parts => Value::Array(parts.iter().map(|p| part_json(p, images)).collect()),
        };
        json!({"role": m.role.as_str(), "content": content})
    });
    Value::Array(system.into_iter().chain(messages).collect())
}

fn part_json(part: &Part, images: Images) -> Value {
    match (part, images) {
        (Part::Text(text), _) => json!({"type": "text", "text": text}),
        (Part::Image(image), Images::Inline) => {
            json!({"type": "image", "media_type": image.media_type, "data": image.base64()})
        }
        (Part::Image(image), Images::Hashed) => {
            json!({"type": "image", "media_type": image.media_type, "sha256": image.sha256})
        }
    }
}

/// The text of the turn the target answers: the last user message's.
fn prompt_text(chat: &ChatRequest) -> String {
    chat.messages
        .iter()
        .rev()
        .find(|m| m.role == Role::User)
        .map(crate::llm::Message::text)
        .unwrap_or_default()
}

/// What a body template's names are filled from: the case's values, then track's own
/// (`prompt`, `messages`, `system`, `model`, `values`), which win over a column of the name.
fn fields(request: AppRequest<'_>, images: Images) -> Values {
    let mut fields = request.values.cloned().unwrap_or_default();
    let chat = request.chat;
    fields.insert("prompt".into(), Value::String(prompt_text(chat)));
    fields.insert("messages".into(), messages_json(chat, images));
    fields.insert(
        "system".into(),
        chat.system
            .as_deref()
            .map_or(Value::Null, |s| Value::String(s.to_owned())),
    );
    fields.insert("model".into(), Value::String(chat.model.to_string()));
    fields.insert(
        "values".into(),
        Value::Object(request.values.cloned().unwrap_or_default()),
    );
    fields
}

/// The JSON request a command reads on stdin.
fn exec_request(request: AppRequest<'_>, images: Images) -> Value {
    let chat = request.chat;
    json!({
        "model": chat.model.as_ref(),
        "messages": messages_json(chat, images),
        "prompt": prompt_text(chat),
        "values": request.values.cloned().unwrap_or_default(),
        "params": serde_json::to_value(&*chat.params).unwrap_or_default(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::llm::{Message, SamplingParams};
    use http::{BodyTemplate, HeaderTemplate, HttpTarget};
    use path::JsonPath;

    fn chat(text: &str) -> ChatRequest {
        ChatRequest {
            tools: None,
            model: TEST_MODEL.into(),
            system: Some("be brief".into()),
            messages: vec![Message::user(text)].into(),
            params: SamplingParams {
                temperature: Some(0.0),
                ..SamplingParams::default()
            }
            .into(),
            schema: None,
        }
    }

    const TEST_MODEL: &str = "default";

    fn http_spec(tenant: &str) -> Arc<TargetSpec> {
        let body = json!({"q": "{{prompt}}", "ctx": "{{context}}", "history": "{{messages}}"});
        Arc::new(TargetSpec {
            sender: Sender::Http(Box::new(HttpTarget {
                method: reqwest::Method::POST,
                headers: vec![
                    HeaderTemplate::parse("Authorization", "Bearer ${TRACK_TEST_APP_TOKEN}")
                        .unwrap(),
                    HeaderTemplate::parse("X-Tenant", tenant).unwrap(),
                ],
                body: Some(BodyTemplate::parse(&body)),
                answer: JsonPath::parse("answer").unwrap(),
                input_tokens: None,
                output_tokens: None,
                cost_usd: None,
            })),
            timeout: None,
        })
    }

    fn endpoint(url: &str) -> Endpoint {
        Endpoint {
            provider: "my-app".into(),
            kind: crate::llm::ProviderKind::Http,
            base_url: url.into(),
            api_key: None,
            basic_auth: None,
        }
    }

    fn app_with_token(spec: Arc<TargetSpec>, token: &str) -> App {
        let Sender::Http(target) = &spec.sender else {
            unreachable!()
        };
        let (headers, missing) = http::resolve_headers(target, |_| Some(token.to_owned()));
        App {
            provider: "my-app".into(),
            spec: spec.clone(),
            headers,
            missing,
        }
    }

    #[test]
    fn an_http_key_holds_the_method_url_literal_headers_and_body_but_no_secret() {
        let values: Values = json!({"context": "Paris is in France."})
            .as_object()
            .unwrap()
            .clone();
        let key = |app: &App, at: &Endpoint, text: &str, repeat: u32| {
            let chat = chat(text);
            let sent = AppRequest {
                chat: &chat,
                values: Some(&values),
            };
            app.canonical_json(at, sent, repeat)
        };
        let at = endpoint("http://127.0.0.1:8000/ask");
        let one = app_with_token(http_spec("acme"), "tok-ONE-secret");
        let two = app_with_token(http_spec("acme"), "tok-TWO-secret");
        let json = key(&one, &at, "Where?", 0);
        // Another token, the same key; and no token in it.
        assert_eq!(json, key(&two, &at, "Where?", 0));
        assert!(
            !json.contains("tok-ONE") && !json.contains("uthorization"),
            "{json}"
        );
        let sent: Value = serde_json::from_str(&json).unwrap();
        assert_eq!(sent["sent"]["method"], "POST");
        assert_eq!(sent["sent"]["url"], "http://127.0.0.1:8000/ask");
        assert_eq!(sent["sent"]["headers"], json!({"x-tenant": "acme"}));
        assert_eq!(sent["sent"]["body"]["q"], "Where?");
        assert_eq!(sent["sent"]["body"]["ctx"], "Paris is in France.");
        assert_eq!(
            sent["sent"]["body"]["history"],
            json!([{"role": "system", "content": "be brief"}, {"role": "user", "content": "Where?"}])
        );
        // Sorted keys, compact.
        assert_eq!(crate::llm::canonical::sorted(&sent).to_string(), json);
        // Everything sent changes the key: the body, a literal header, the URL, the sample.
        assert_ne!(json, key(&one, &at, "When?", 0));
        let other_tenant = app_with_token(http_spec("other"), "tok-ONE-secret");
        assert_ne!(json, key(&other_tenant, &at, "Where?", 0));
        let v2 = endpoint("http://127.0.0.1:8000/v2");
        assert_ne!(json, key(&one, &v2, "Where?", 0));
        assert_ne!(json, key(&one, &at, "Where?", 1));
        // A value the body needs and the case lacks is in the key as such (the send fails).
        let bare = chat("Where?");
        let sent = AppRequest {
            chat: &bare,
            values: None,
        };
        let none = one.canonical_json(&at, sent, 0);
        assert!(none.contains("no value for `{{context}}`"), "{none}");
    }

    #[test]
    fn an_exec_key_holds_the_command_and_its_request_with_images_by_hash() {
        let dir = std::env::temp_dir();
        let spec = |run: &str| {
            Arc::new(TargetSpec {
                sender: Sender::Exec(exec::ExecTarget {
                    program: crate::process::Program::new(run, &dir, "x").unwrap(),
                }),
                timeout: None,
            })
        };
        let app = App::resolve("my-script", spec("python3 app.py"));
        let mut with_image = chat("What is this?");
        std::sync::Arc::get_mut(&mut with_image.messages).unwrap()[0]
            .parts
            .push(Part::Image(crate::llm::Image::new(
                "image/png",
                vec![1, 2, 3],
            )));
        let values: Values = json!({"id": 7}).as_object().unwrap().clone();
        let sent = AppRequest {
            chat: &with_image,
            values: Some(&values),
        };
        let at = endpoint("python3 app.py");
        let json = app.canonical_json(&at, sent, 0);
        let canon: Value = serde_json::from_str(&json).unwrap();
        assert_eq!(canon["target"], "exec");
        assert_eq!(canon["sent"]["run"], "python3 app.py");
        assert_eq!(canon["sent"]["request"]["values"], json!({"id": 7}));
        assert_eq!(canon["sent"]["request"]["prompt"], "What is this?");
        assert_eq!(
            canon["sent"]["request"]["params"],
            json!({"temperature": 0.0})
        );
        assert!(
            json.contains(&crate::hash::sha256_hex(&[1, 2, 3])),
            "{json}"
        );
        assert!(!json.contains("AQID"), "no image bytes in the key");
        // What the command reads holds the bytes.
        let stdin = exec_request(sent, Images::Inline).to_string();
        assert!(stdin.contains("AQID"), "{stdin}");
        let other = App::resolve("my-script", spec("python3 app2.py"));
        assert_ne!(json, other.canonical_json(&at, sent, 0));
    }
}
