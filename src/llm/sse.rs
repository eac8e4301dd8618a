//! Server-sent events, as OpenAI and Anthropic stream answers: a body already read, split into
//! its events (the WHATWG `text/event-stream` rules that those streams use: `event:` and `data:`
//! fields, comments, events ended by a blank line).

/// One event: its `event:` type (if it named one) and its data lines joined by newlines.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Event {
    pub kind: Option<String>,
    pub data: String,
}

/// Whether `response` is an event stream (its content type says so).
pub(crate) fn is_event_stream(response: &reqwest::Response) -> bool {
    response
        .headers()
        .get(reqwest::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.trim_start().starts_with("text/event-stream"))
}

/// Whether `body` reads as an event stream: it starts with a field or a comment, where a JSON
/// answer starts with `{`.
pub(crate) fn looks_like_events(body: &[u8]) -> bool {
    let text = String::from_utf8_lossy(&body[..body.len().min(64)]);
    let start = text.trim_start();
    start.starts_with("data:") || start.starts_with("event:") || start.starts_with(':')
}

/// The events of `body`, in order. An event with no data is dropped; the last one counts even
/// without its closing blank line (the stream's end is judged by its own last event).
pub(crate) fn events(body: &[u8]) -> Vec<Event> {
    let text = String::from_utf8_lossy(body);
    let mut events = Vec::new();
    let mut kind: Option<String> = None;
    let mut data: Option<String> = None;
    let mut dispatch = |kind: &mut Option<String>, data: &mut Option<String>| {
        if let Some(data) = data.take() {
            events.push(Event {
                kind: kind.take(),
                data,
            });
        }
        *kind = None;
    };
    for line in text.split('\n') {
        let line = line.strip_suffix('\r').unwrap_or(line);
        if line.is_empty() {
            dispatch(&mut kind, &mut data);
            continue;
        }
        if line.starts_with(':') {
            continue;
        }
        let (field, value) = line.split_once(':').unwrap_or((line, ""));
        let value = value.strip_prefix(' ').unwrap_or(value);
        match field {
            "event" => kind = Some(value.to_owned()),
            "data" => match &mut data {
                Some(joined) => {
                    joined.push('\n');
                    joined.push_str(value);
                }
                None => data = Some(value.to_owned()),
            },
            _ => {}
        }
    }
    dispatch(&mut kind, &mut data);
    events
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn splits_events_with_types_comments_and_multiline_data() {
        let body = b": keep-alive\r\nevent: ping\r\ndata: {}\r\n\r\ndata: one\ndata: two\n\n\
                     event: empty\n\ndata: last";
        let got = events(body);
        assert_eq!(
            got,
            vec![
                Event {
                    kind: Some("ping".into()),
                    data: "{}".into()
                },
                Event {
                    kind: None,
                    data: "one\ntwo".into()
                },
                Event {
                    kind: None,
                    data: "last".into()
                },
            ]
        );
    }

    #[test]
    fn tells_a_stream_from_json() {
        assert!(looks_like_events(b"\ndata: {\"a\":1}\n\n"));
        assert!(looks_like_events(b"event: message_start\n"));
        assert!(!looks_like_events(b"{\"choices\":[]}"));
        assert!(!looks_like_events(b""));
    }
}
