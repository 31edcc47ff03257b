//! A prepared dispatch as the JSON text the JS side reads (the binding's
//! `NativePlan`). It embeds each call's input, and the outcome, as JSON
//! rather than as strings, so the JS side parses each once, with the plan:
//! building the same plan as JS objects through napi cost several times
//! that parse, property by property.

use std::fmt::Write as _;

use super::outcome::DispatchOutcome;
use super::run::max_reply_len;
use super::steps::Prepared;

/// `prepared` as `{ ticket, replayed, done? , wait?, calls? }`: `done` the
/// outcome as `outcome` writes it, `wait` the ticket to wait for, `calls`
/// `{ slot, attempt, maxReplyLength, hookId, dispatchId, input }` each.
pub fn plan_json(prepared: Prepared, outcome: impl FnOnce(&DispatchOutcome) -> String) -> String {
    let mut out = String::with_capacity(192);
    match prepared {
        Prepared::Done(done) => {
            let replayed = done.is_final_replay();
            let _ = write!(out, "{{\"ticket\":0,\"replayed\":{replayed},\"done\":");
            out.push_str(&outcome(&done));
            out.push('}');
        }
        Prepared::Wait(holder) => {
            let _ = write!(out, "{{\"ticket\":0,\"replayed\":false,\"wait\":{holder}}}");
        }
        Prepared::Run(p) => {
            out.reserve(p.calls.iter().map(|c| c.input_json.len() + 160).sum());
            let _ = write!(out, "{{\"ticket\":{},\"replayed\":false,\"calls\":[", p.ticket);
            for (i, c) in p.calls.into_iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                let max = u32::try_from(max_reply_len(&c.hook)).unwrap_or(u32::MAX);
                let _ =
                    write!(out, "{{\"slot\":{},\"attempt\":{},\"maxReplyLength\":{max},\"hookId\":", c.slot, c.attempt);
                out.push_str(&serde_json::Value::from(c.hook.hook_id.as_str()).to_string());
                out.push_str(",\"dispatchId\":");
                out.push_str(&serde_json::Value::from(c.dispatch_id).to_string());
                // JSON text the core wrote: embedded as it is.
                out.push_str(",\"input\":");
                out.push_str(&c.input_json);
                out.push('}');
            }
            out.push_str("]}");
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use serde_json::{json, Value};

    use super::super::request::AdmissionRefusal;
    use super::super::tests::{enabled, fixture, registration, request};
    use super::*;

    fn parsed(text: &str) -> Value {
        serde_json::from_str(text).unwrap_or_else(|e| panic!("{e}: {text}"))
    }

    #[test]
    fn a_plan_embeds_its_inputs_and_its_outcome_as_json() {
        let f = fixture(enabled());
        let d = &f.dispatcher;
        d.register_external(&registration("a", 2, 1000)).unwrap();
        d.register_external(&registration("b", 2, 1000)).unwrap();
        let req = request("r1");

        let first = d.prepare(req.clone()).unwrap();
        let Prepared::Run(run) = &first else { panic!("expected calls") };
        let ticket = run.ticket;
        let inputs: Vec<Value> = run.calls.iter().map(|c| parsed(&c.input_json)).collect();
        let ids: Vec<String> = run.calls.iter().map(|c| c.dispatch_id.clone()).collect();
        let max = max_reply_len(&run.calls[0].hook);
        let plan = parsed(&plan_json(first, |_| unreachable!()));
        let calls: Vec<Value> = (0..2)
            .map(|i| {
                json!({
                    "slot": i, "attempt": 1, "maxReplyLength": max,
                    "hookId": format!("periodic_report.{}", ["a", "b"][i]),
                    "dispatchId": ids[i], "input": inputs[i],
                })
            })
            .collect();
        assert_eq!(plan, json!({ "ticket": ticket, "replayed": false, "calls": calls }));

        // The identities are held: the same request waits for this ticket.
        let waiting = parsed(&plan_json(d.prepare(req).unwrap(), |_| unreachable!()));
        assert_eq!(waiting, json!({ "ticket": 0, "replayed": false, "wait": ticket }));
        d.cancel(ticket);

        let refused = DispatchOutcome::refused(AdmissionRefusal::EffectMismatch);
        let text = plan_json(Prepared::Done(refused), |o| serde_json::to_string(o).unwrap());
        assert_eq!(
            parsed(&text),
            json!({ "ticket": 0, "replayed": false, "done": { "admitted": false, "refusal": "effect_mismatch", "hooks": [] } })
        );
    }
}
