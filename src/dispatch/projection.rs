//! The compact, public-safe input one hook receives (RFC section 7). Core
//! chooses the projection; a registration cannot ask for more, and gets only
//! what its `requested_read_scope` grants (contract-v0 section 1).

use serde_json::{json, Value};

use super::dialect::RegisteredHook;
use super::request::DispatchRequest;
use crate::contract::{
    EventKind, EventProjectionSchemaVersion, HookInputSchemaVersion, PostWritebackHookRegistration, ReadScope,
    RegistrationSchemaVersion,
};
use crate::identity::{dispatch_id, DispatchIdentity};
use crate::validate::{check_hook_input, Violation};

/// The dispatch identity of `hook` for `request`.
pub fn dispatch_id_for(request: &DispatchRequest, hook: &RegisteredHook) -> String {
    dispatch_id(&DispatchIdentity {
        receipt_id: &request.receipt.receipt_id,
        effect_id: &request.receipt.effect_id,
        hook_id: &hook.hook_id,
        capability_id: &hook.capability_id,
        registration_digest: &hook.digest,
        registration_schema_version: RegistrationSchemaVersion::VALUE,
        event_kind: &request.event.event_kind,
    })
}

/// Builds the input and proves it public-safe with the same validator any
/// caller uses; when it cannot be proven, the hook is not invoked.
pub fn project(
    request: &DispatchRequest,
    registration: &PostWritebackHookRegistration,
    digest: &str,
    dispatch_id: &str,
) -> Result<Value, Vec<Violation>> {
    let (r, s, e) = (&request.receipt, &request.settlement, &request.event);
    let member = |field: &str| -> Option<Value> {
        Some(json!(match field {
            "receipt_id" => &r.receipt_id,
            "effect_id" => &r.effect_id,
            "step_kind" => &r.step_kind,
            "event_kind" => &e.event_kind,
            "committed_at" => &r.committed_at,
            "goal_id" => &s.goal_id,
            "agent_id" => &s.agent_id,
            "todo_id" => &s.todo_id,
            "turn_instance_id" => &s.turn_instance_id,
            "state_revision" => &r.state_revision,
            _ => return Some(json!(e.fact_refs)),
        }))
    };
    let input = input_of(&member, &e.event_kind, registration, dispatch_id);
    check_hook_input(&input, registration, digest).map_err(Vec::from)?;
    Ok(input)
}

/// Where each member of a hook input's source comes from in a request.
const SOURCE: [(&str, &str); 5] = [
    ("receipt_id", "receipt"),
    ("effect_id", "receipt"),
    ("step_kind", "receipt"),
    ("event_kind", "event"),
    ("committed_at", "receipt"),
];
/// The members `settlement_identity` grants, and where they come from.
const IDENTITY: [(&str, &str); 5] = [
    ("goal_id", "settlement"),
    ("agent_id", "settlement"),
    ("todo_id", "settlement"),
    ("turn_instance_id", "settlement"),
    ("state_revision", "receipt"),
];

/// The input for `registration`: `member(name)` is the source member `name`
/// (or `fact_refs`), None when the request lacks it (left out, so the
/// validator calls it missing). The registration's scopes decide what goes in.
fn input_of(
    member: &dyn Fn(&str) -> Option<Value>,
    event_kind: &str,
    registration: &PostWritebackHookRegistration,
    dispatch_id: &str,
) -> Value {
    let transition = EventKind::parse(event_kind).map(|k| k.transition().as_str()).unwrap_or("");
    let scopes = &registration.requested_read_scope;
    let mut source = serde_json::Map::new();
    let identity = if scopes.contains(&ReadScope::SettlementIdentity) { &IDENTITY[..] } else { &[] };
    for (field, _) in SOURCE.iter().chain(identity) {
        if let Some(value) = member(field) {
            source.insert((*field).to_owned(), value);
        }
    }
    let fact_refs = if scopes.contains(&ReadScope::BoundedEventProjection) {
        member("fact_refs").unwrap_or_else(|| json!([]))
    } else {
        json!([])
    };
    json!({
        "schema_version": HookInputSchemaVersion::VALUE,
        "dispatch_id": dispatch_id,
        "hook_id": registration.hook_id,
        "capability_id": registration.capability_id,
        "source": source,
        "projection": {
            "schema_version": EventProjectionSchemaVersion::VALUE,
            "transition": transition,
            "fact_refs": fact_refs,
        },
        "boundary": {
            "raw_task_text_recorded": false,
            "raw_logs_recorded": false,
            "raw_trajectory_recorded": false,
            "raw_session_transcript_recorded": false,
            "credential_values_recorded": false,
            "absolute_paths_recorded": false,
        },
    })
}

/// The input a hook of `registration` would get for `request`, a document
/// shaped like a [`DispatchRequest`] whose members may be anything: each is
/// taken as given (a missing one left out), so the input validator names
/// what is wrong at its place in the input. For a caller that judges a
/// request before its receipt exists (the reference orchestrator's primary
/// validation). The dispatch id is derived from the members that are
/// strings, an empty string standing in for the others (which the validator
/// reports). A violation of the transition is left out: core derives it from
/// the event kind, whose own violation names the fault.
pub fn project_document(
    request: &Value,
    registration: &PostWritebackHookRegistration,
    digest: &str,
) -> Result<Value, Vec<Violation>> {
    let at = |part: &str, field: &str| request.get(part).and_then(|p| p.get(field));
    let member = |field: &str| -> Option<Value> {
        let part = SOURCE.iter().chain(&IDENTITY).find(|(f, _)| *f == field).map_or("event", |(_, part)| *part);
        at(part, field).cloned()
    };
    let text = |part: &str, field: &str| at(part, field).and_then(Value::as_str).unwrap_or("");
    let event_kind = text("event", "event_kind");
    let dispatch_id = dispatch_id(&DispatchIdentity {
        receipt_id: text("receipt", "receipt_id"),
        effect_id: text("receipt", "effect_id"),
        hook_id: &registration.hook_id,
        capability_id: &registration.capability_id,
        registration_digest: digest,
        registration_schema_version: RegistrationSchemaVersion::VALUE,
        event_kind,
    });
    let input = input_of(&member, event_kind, registration, &dispatch_id);
    match check_hook_input(&input, registration, digest) {
        Ok(()) => Ok(input),
        Err(found) => {
            Err(found.into_vec().into_iter().filter(|v| !v.path.starts_with("/projection/transition")).collect())
        }
    }
}

/// What stands in for a member of the request that `hook` may not read.
/// Never read back: recovery re-projects for the same hook, whose scopes
/// leave the member out.
pub const WITHHELD: &str = "withheld";

/// The request as the journal keeps it for recovering `hook`'s identity:
/// exactly the members [`project`] put into that hook's input (which the
/// input validator scanned), the fixed admission values, and [`WITHHELD`]
/// for the rest. Recovery re-derives the same dispatch id and the same
/// input from it; no member that no hook of this identity reads is ever
/// written, so a credential outside every hook's scope never reaches a file.
pub fn recoverable_request(request: &DispatchRequest, registration: &PostWritebackHookRegistration) -> DispatchRequest {
    let scopes = &registration.requested_read_scope;
    let identity = scopes.contains(&ReadScope::SettlementIdentity);
    let kept = |value: &String| if identity { value.clone() } else { WITHHELD.to_owned() };
    let (s, r) = (&request.settlement, &request.receipt);
    DispatchRequest {
        settlement: super::request::SettlementIdentity {
            goal_id: kept(&s.goal_id),
            agent_id: kept(&s.agent_id),
            todo_id: kept(&s.todo_id),
            turn_instance_id: kept(&s.turn_instance_id),
            // Admission holds it equal to the receipt's, which every input carries.
            effect_id: r.effect_id.clone(),
        },
        receipt: super::request::WritebackReceipt {
            receipt_id: r.receipt_id.clone(),
            effect_id: r.effect_id.clone(),
            step_kind: r.step_kind.clone(),
            status: r.status.clone(),
            checkpointed: r.checkpointed,
            state_revision: kept(&r.state_revision),
            committed_at: r.committed_at.clone(),
        },
        event: super::request::EventFacts {
            event_kind: request.event.event_kind.clone(),
            fact_refs: if scopes.contains(&ReadScope::BoundedEventProjection) {
                request.event.fact_refs.clone()
            } else {
                Vec::new()
            },
        },
    }
}

#[cfg(test)]
mod tests {
    //! RFC sections 6 and 7: `requested_read_scope` is applied. A hook gets
    //! the members its registration's scopes grant and no others, and the
    //! input it gets passes the hook-input validator against that
    //! registration.

    use std::sync::Arc;

    use serde_json::{json, Value};

    use super::*;
    use crate::dispatch::provider::Provider;
    use crate::dispatch::request::tests::request;
    use crate::provider_reply::{ProviderReply, ReplyFuture};
    use crate::validate::fixtures::{registration, typed, with};
    use crate::validate::Rule;
    use crate::{identity, validate::input::SETTLEMENT_FIELDS};

    struct Never;
    impl Provider for Never {
        fn invoke(&self, _: String) -> ReplyFuture {
            Box::pin(async { ProviderReply::Threw })
        }
    }

    fn hook(scopes: &[&str]) -> RegisteredHook {
        let doc = with(registration(), "/requested_read_scope", json!(scopes));
        crate::dialect::contract_v0::registered_hook(
            typed(&doc),
            identity::registration_digest(&doc),
            Some(Arc::new(Never)),
        )
    }

    fn reg(hook: &RegisteredHook) -> &PostWritebackHookRegistration {
        hook.registration::<PostWritebackHookRegistration>().expect("a contract-v0 fixture")
    }

    fn projected(scopes: &[&str]) -> Value {
        let (request, hook) = (request(), hook(scopes));
        project(&request, reg(&hook), &hook.digest, &dispatch_id_for(&request, &hook)).expect("a valid projection")
    }

    /// RFC section 9: "The journal stores bounded typed packets ... It does
    /// not store ... credentials". The kept request holds only what the
    /// hook's input holds, and recovering from it gives the same identity
    /// and the same input.
    #[test]
    fn the_recoverable_request_keeps_only_what_the_hook_reads() {
        let mut secret_request = request();
        secret_request.event.fact_refs = vec!["ghp_0123456789abcdefghijklmnopqrstuvwxyz".into()];
        secret_request.settlement.goal_id = "sk-live0123456789".into();
        secret_request.receipt.state_revision = "eyJhbGciOi.eyJzdWIi.c2ln".into();
        for scopes in [
            &["settlement_identity"][..],
            &["bounded_event_projection"],
            &["settlement_identity", "bounded_event_projection"],
        ] {
            let hook = hook(scopes);
            let plain = request();
            let kept = recoverable_request(&plain, reg(&hook));
            let id = dispatch_id_for(&plain, &hook);
            assert_eq!(dispatch_id_for(&kept, &hook), id, "{scopes:?}");
            assert_eq!(
                project(&kept, reg(&hook), &hook.digest, &id).unwrap(),
                project(&plain, reg(&hook), &hook.digest, &id).unwrap(),
                "{scopes:?}"
            );
            assert_eq!(crate::dispatch::admit(&kept, true), Ok(()));
            // A member outside the hook's scopes never reaches the kept request.
            let text = serde_json::to_string(&recoverable_request(&secret_request, reg(&hook))).unwrap();
            if !scopes.contains(&"bounded_event_projection") {
                assert!(!text.contains("ghp_"), "{scopes:?}: {text}");
            }
            if !scopes.contains(&"settlement_identity") {
                assert!(!text.contains("sk-live") && !text.contains("eyJ"), "{scopes:?}: {text}");
            }
        }
    }

    /// A request document projects as the typed request does, under every
    /// scope, and a bad member is one violation where the input holds it:
    /// an unknown kind is not blamed a second time on the transition.
    #[test]
    fn a_request_document_projects_as_the_request_does() {
        let request = request();
        let doc = serde_json::to_value(&request).unwrap();
        for scopes in [
            &["settlement_identity"][..],
            &["bounded_event_projection"],
            &["settlement_identity", "bounded_event_projection"],
        ] {
            let hook = hook(scopes);
            let typed = project(&request, reg(&hook), &hook.digest, &dispatch_id_for(&request, &hook)).unwrap();
            assert_eq!(project_document(&doc, reg(&hook), &hook.digest).unwrap(), typed, "{scopes:?}");
        }
        let hook = hook(&["settlement_identity", "bounded_event_projection"]);
        let judged = |change: &dyn Fn(&mut Value)| {
            let mut bad = doc.clone();
            change(&mut bad);
            project_document(&bad, reg(&hook), &hook.digest).unwrap_err()
        };
        let one = |path: &str, rule: Rule| vec![Violation { path: path.into(), rule }];
        assert_eq!(
            judged(&|d| d["event"]["event_kind"] = json!("todo_deleted")),
            one("/source/event_kind", Rule::UnknownEventKind)
        );
        assert_eq!(
            judged(&|d| {
                d["settlement"].as_object_mut().unwrap().remove("agent_id");
            }),
            one("/source/agent_id", Rule::MissingField)
        );
        assert_eq!(judged(&|d| d["receipt"]["effect_id"] = json!(7)), one("/source/effect_id", Rule::WrongType));
        assert_eq!(
            judged(&|d| d["event"]["fact_refs"] = json!(["/home/a"])),
            one("/projection/fact_refs/0", Rule::BadOpaqueRef)
        );
    }

    #[test]
    fn requested_read_scope_is_applied_to_the_projection() {
        let identity_only = projected(&["settlement_identity"]);
        for field in SETTLEMENT_FIELDS {
            assert!(identity_only["source"][field].is_string(), "{field}");
        }
        assert_eq!(identity_only["projection"]["fact_refs"], json!([]));

        let facts_only = projected(&["bounded_event_projection"]);
        for field in SETTLEMENT_FIELDS {
            assert!(facts_only["source"].get(field).is_none(), "{field}");
        }
        assert_eq!(facts_only["projection"]["fact_refs"], json!(["fact_opaque"]));

        let both = projected(&["settlement_identity", "bounded_event_projection"]);
        assert_eq!(both["source"]["todo_id"], json!("todo_opaque"));
        assert_eq!(both["projection"]["fact_refs"], json!(["fact_opaque"]));

        // Every input carries what identity and applicability need.
        for input in [&identity_only, &facts_only, &both] {
            for field in ["receipt_id", "effect_id", "step_kind", "event_kind", "committed_at"] {
                assert!(input["source"][field].is_string(), "{field}");
            }
            assert_eq!(input["projection"]["transition"], json!("segment_completed"));
        }
    }
}
