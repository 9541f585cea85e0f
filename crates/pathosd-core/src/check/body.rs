//! The expectations on a reply's body that the http and ubus checks share:
//! `response_text`, `response_regex` and `response_jq`, checked in that
//! order. The http check judges the response body with it, the ubus check
//! the reply's table as JSON text.

use super::jsonmatch::{self, JsonExpr};
use crate::config::schema::{BodyJq, BodyRegex};

/// What a body must hold; nothing set: any body passes.
#[derive(Debug, Clone, Default)]
pub struct BodyMatch {
    text: Option<String>,
    regex: Option<regex_lite::Regex>,
    jq: Option<JsonExpr>,
}

impl BodyMatch {
    /// From a check's options, each compiled when the config was read.
    pub fn new(text: Option<&String>, regex: Option<&BodyRegex>, jq: Option<&BodyJq>) -> BodyMatch {
        BodyMatch {
            text: text.cloned(),
            regex: regex.map(|r| r.regex().clone()),
            jq: jq.map(|j| j.expr().clone()),
        }
    }

    /// Whether any expectation is set (the http check reads the body only
    /// then).
    pub fn wants_body(&self) -> bool {
        self.text.is_some() || self.regex.is_some() || self.jq.is_some()
    }

    /// Whether `body` meets every expectation; the first one it does not
    /// meet, as a detail.
    pub fn judge(&self, body: &[u8]) -> Result<(), String> {
        let body_text = String::from_utf8_lossy(body);
        if let Some(t) = &self.text {
            if !body_text.contains(t.as_str()) {
                return Err(format!("body does not contain {t:?}"));
            }
        }
        if let Some(re) = &self.regex {
            if !re.is_match(&body_text) {
                return Err(format!("body does not match /{}/", re.as_str()));
            }
        }
        if let Some(jq) = &self.jq {
            let doc: serde_json::Value = serde_json::from_slice(body)
                .map_err(|_| "response is not valid JSON".to_string())?;
            jsonmatch::matches(jq, &doc)?;
        }
        Ok(())
    }
}
