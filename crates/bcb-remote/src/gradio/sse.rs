//! A minimal server-sent-events reader (WHATWG "event stream" format): `event:` and `data:`
//! lines, a blank line ends a message. Gradio's `/call/{api}/{event_id}` speaks it.

use std::io::BufRead;

/// One dispatched message.
#[derive(Debug, Clone, PartialEq)]
pub struct Message {
    /// `message` when the server sent no `event:` line.
    pub event: String,
    pub data: String,
}

/// Reads messages until the stream ends; `Ok(None)` at the end.
pub struct Reader<R> {
    inner: R,
}

impl<R: BufRead> Reader<R> {
    pub fn new(inner: R) -> Self {
        Reader { inner }
    }

    pub fn next_message(&mut self) -> std::io::Result<Option<Message>> {
        let mut event = String::new();
        let mut data: Vec<String> = Vec::new();
        let mut line = String::new();
        loop {
            line.clear();
            if self.inner.read_line(&mut line)? == 0 {
                // A message cut off by the end of the stream is not dispatched (per spec).
                return Ok(None);
            }
            let l = line.trim_end_matches(['\n', '\r']);
            if l.is_empty() {
                if event.is_empty() && data.is_empty() {
                    continue;
                }
                let event = if event.is_empty() {
                    "message".to_string()
                } else {
                    event
                };
                return Ok(Some(Message {
                    event,
                    data: data.join("\n"),
                }));
            }
            if l.starts_with(':') {
                continue; // comment
            }
            let (field, value) = match l.split_once(':') {
                Some((f, v)) => (f, v.strip_prefix(' ').unwrap_or(v)),
                None => (l, ""),
            };
            match field {
                "event" => event = value.to_string(),
                "data" => data.push(value.to_string()),
                _ => {}
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_gradio_style_events() {
        let text = "event: heartbeat\ndata: null\n\n: comment\nevent: complete\ndata: [1,\ndata: 2]\n\nevent: cut";
        let mut r = Reader::new(text.as_bytes());
        let m = r.next_message().unwrap().unwrap();
        assert_eq!((m.event.as_str(), m.data.as_str()), ("heartbeat", "null"));
        let m = r.next_message().unwrap().unwrap();
        assert_eq!((m.event.as_str(), m.data.as_str()), ("complete", "[1,\n2]"));
        assert_eq!(r.next_message().unwrap(), None);
    }
}
