//! The kernel's entry points for a caller that holds text (the JS binding):
//! what text that is not JSON means, and the limits each planned call runs
//! under, decided here so a caller only converts and forwards.

use serde_json::Value;

use super::judge::MAX_RECEIPT_BYTES;
use super::kernel::TurnStartKernel;
use super::steps::{TurnStartCall, TurnStartPrepared};
use crate::validate::{Rule, Violation};

impl TurnStartKernel {
    /// Step 1 from the request's JSON text. Text that is not JSON is a
    /// refused request (`not_json_value` at the root), like any document
    /// that fails validation: the caller gets an outcome, not an error.
    pub fn prepare_text(&self, request_json: &str) -> TurnStartPrepared {
        match serde_json::from_str::<Value>(request_json) {
            Ok(doc) => self.prepare(&doc),
            Err(_) => {
                TurnStartPrepared::Done(self.refused(vec![Violation { path: String::new(), rule: Rule::NotJsonValue }]))
            }
        }
    }
}

impl TurnStartCall {
    /// The call's timeout, counted from the call: its registration's budget.
    pub fn timeout_ms(&self) -> u32 {
        self.hook.registration.budget.timeout_ms
    }

    /// A reply text longer than this is `result_too_large` and need not be
    /// kept or handed over at all.
    pub fn max_reply_length(&self) -> usize {
        MAX_RECEIPT_BYTES
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::turn_start::TurnStartProfile;

    #[test]
    fn text_that_is_not_json_is_a_refused_request() {
        let kernel = TurnStartKernel::new(TurnStartProfile::default());
        for text in ["", "{", "not json", "{\"a\":1}x"] {
            let TurnStartPrepared::Done(outcome) = kernel.prepare_text(text) else { panic!("{text:?} was planned") };
            assert!(!outcome.admitted, "{text:?}");
            assert_eq!(outcome.violations, vec![Violation { path: String::new(), rule: Rule::NotJsonValue }]);
        }
    }
}
