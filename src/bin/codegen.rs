//! Code generator for the v0 contract: TypeScript bindings (ts-rs), JSON Schemas
//! 2020-12 (schemars) and valid example documents.
//!
//! `cargo run --bin codegen -- [out_dir]` writes `out_dir/bindings/*.ts`,
//! `out_dir/schemas/*.schema.json`, `out_dir/examples/*.json` and the
//! validators' JavaScript fast path `out_dir/lib/generated/*.ts` (default: the
//! repository root). Output is deterministic; `__test__/generated.spec.ts`
//! checks that the committed files are exactly what this writes.

use std::error::Error;
use std::fs;
use std::path::{Path, PathBuf};

use loopx_hooks::contract::*;
use loopx_hooks::dialect::shipped::{self, sidecar, turn_start as shipped_ts};
use loopx_hooks::{dispatch, error_code, identity, journal, options, turn_start};
use schemars::generate::SchemaSettings;
use schemars::transform::RestrictFormats;
use schemars::{JsonSchema, Schema};
use serde::Serialize;
use serde_json::{json, Value};
use ts_rs::{Config, ExportError, TS};

type Res<T = ()> = Result<T, Box<dyn Error>>;

/// Writes one type's TypeScript file and those of its dependencies.
type ExportTs = fn(&Config) -> Result<(), ExportError>;
/// Builds one document's JSON Schema.
type MakeSchema = fn() -> Schema;

/// Every exported public type; ts-rs adds their dependencies.
const TS_TYPES: &[ExportTs] = &[
    PostWritebackHookRegistration::export_all,
    PostWritebackHookInput::export_all,
    PostWritebackHookResult::export_all,
    PostWritebackIntent::export_all,
    IntentKindDefinition::export_all,
    PayloadSchema::export_all,
    DispatchReceipt::export_all,
    FailureReceipt::export_all,
    Violation::export_all,
    Rule::export_all,
    Phase::export_all,
    EventKind::export_all,
    Transition::export_all,
    ReadScope::export_all,
    FailurePolicy::export_all,
    StepKind::export_all,
    ReceiptStatus::export_all,
    ResultStatus::export_all,
    DispatchStatus::export_all,
    FailureCode::export_all,
    Dialect::export_all,
    // Every stable error code, and the shape an error crosses to JS in.
    error_code::ErrorCode::export_all,
    error_code::ErrorData::export_all,
    // The options objects of the JS API (src/options.rs).
    options::RuntimeOptions::export_all,
    options::JournalOpenOptions::export_all,
    // The dispatcher's public documents (request, profile, outcome, recovery).
    dispatch::DispatchRequest::export_all,
    dispatch::Profile::export_all,
    dispatch::DispatchOutcome::export_all,
    dispatch::RecoverReport::export_all,
    // What journal readers and the outbox return.
    journal::DispatchRow::export_all,
    journal::FailureRow::export_all,
    journal::StoredIntent::export_all,
    journal::JournalStats::export_all,
    journal::IntegrityVerdict::export_all,
    journal::Page::<()>::export_all,
    journal::DecideOutcome::export_all,
    journal::DoneOutcome::export_all,
    journal::PruneReport::export_all,
    journal::StorageStats::export_all,
    journal::RetentionStats::export_all,
    // The turn-start hook's public documents.
    turn_start::TurnStartHookRegistration::export_all,
    turn_start::TurnStartReceipt::export_all,
    // The turn-start kernel's request, profile, provider input and outcome.
    turn_start::TurnStartRequest::export_all,
    turn_start::TurnStartProfile::export_all,
    turn_start::TurnStartHookInput::export_all,
    turn_start::TurnStartOutcome::export_all,
    // The owner-private inbox store's API values (never public documents).
    turn_start::inbox::MessageRef::export_all,
    turn_start::inbox::CaptureInput::export_all,
    turn_start::inbox::CaptureOutcome::export_all,
    turn_start::inbox::FirstReads::export_all,
    turn_start::inbox::PendingMessage::export_all,
    turn_start::inbox::Disposition::export_all,
    turn_start::inbox::DisposeOutcome::export_all,
    turn_start::inbox::AckOutcome::export_all,
    turn_start::inbox::ReactionBegin::export_all,
    turn_start::inbox::ReactionResult::export_all,
    turn_start::inbox::ReactionFinish::export_all,
    turn_start::inbox::CursorKind::export_all,
    turn_start::inbox::ClaimOutcome::export_all,
    turn_start::inbox::AdvanceOutcome::export_all,
    turn_start::inbox::RetentionCounts::export_all,
    // The loopx-shipped-v0 dialect's documents (TS names prefixed `Shipped`).
    shipped::Registration::export_all,
    shipped::Source::export_all,
    shipped::HookInput::export_all,
    shipped::HookResult::export_all,
    shipped::SidecarReceipt::export_all,
    shipped::DispatchResult::export_all,
    shipped_ts::ShippedTurnStartRegistration::export_all,
    shipped_ts::ShippedTurnStartResult::export_all,
    shipped_ts::ShippedTurnStartDispatch::export_all,
    shipped_ts::ShippedTurnStartOutcome::export_all,
    // What `journal import --from-sidecars` reports.
    sidecar::ImportReport::export_all,
];

/// One JSON Schema per public document: (file stem, generator).
const SCHEMAS: &[(&str, MakeSchema)] = &[
    (RegistrationSchemaVersion::VALUE, schema::<PostWritebackHookRegistration>),
    (HookInputSchemaVersion::VALUE, schema::<PostWritebackHookInput>),
    (HookResultSchemaVersion::VALUE, schema::<PostWritebackHookResult>),
    (IntentSchemaVersion::VALUE, schema::<PostWritebackIntent>),
    ("loopx_post_writeback_intent_kind_definition_v0", schema::<IntentKindDefinition>),
    (DispatchReceiptSchemaVersion::VALUE, schema::<DispatchReceipt>),
    (FailureReceiptSchemaVersion::VALUE, schema::<FailureReceipt>),
    ("loopx_hooks_violation_v0", schema::<Violation>),
    (turn_start::TurnStartRegistrationSchemaVersion::VALUE, schema::<turn_start::TurnStartHookRegistration>),
    (turn_start::TurnStartReceiptSchemaVersion::VALUE, schema::<turn_start::TurnStartReceipt>),
];

/// The loopx-shipped-v0 dialect's schemas, in `schemas/shipped/` (its
/// registrations share the RFC's schema strings, so one folder cannot hold both).
const SHIPPED_SCHEMAS: &[(&str, MakeSchema)] = &[
    (shipped::ShippedRegistrationSchemaVersion::VALUE, schema::<shipped::Registration>),
    (shipped::ShippedSourceSchemaVersion::VALUE, schema::<shipped::Source>),
    (shipped::ShippedHookInputSchemaVersion::VALUE, schema::<shipped::HookInput>),
    (shipped::ShippedHookResultSchemaVersion::VALUE, schema::<shipped::HookResult>),
    (shipped::ShippedIntentSchemaVersion::VALUE, schema::<shipped::Intent>),
    (shipped::ShippedSidecarReceiptSchemaVersion::VALUE, schema::<shipped::SidecarReceipt>),
    (shipped::ShippedDispatchSchemaVersion::VALUE, schema::<shipped::DispatchResult>),
    (shipped_ts::ShippedTurnStartRegistrationV0Schema::VALUE, schema::<shipped_ts::ShippedTurnStartRegistrationV0>),
    (shipped_ts::ShippedTurnStartRegistrationV1Schema::VALUE, schema::<shipped_ts::ShippedTurnStartRegistrationV1>),
    (shipped_ts::ShippedTurnStartResultSchema::VALUE, schema::<shipped_ts::ShippedTurnStartResult>),
    (shipped_ts::ShippedTurnStartDispatchSchema::VALUE, schema::<shipped_ts::ShippedTurnStartDispatch>),
];

fn main() -> Res {
    let out =
        std::env::args_os().nth(1).map(PathBuf::from).unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")));
    bindings(&out.join("bindings"))?;
    schemas(&out.join("schemas"))?;
    examples(&out.join("examples"))?;
    let fast_path = loopx_hooks::validate::js_fast_path::registration_fast_path()?;
    write(&out.join("lib").join("generated").join("fast_valid.ts"), fast_path)?;
    write(&out.join("lib").join("generated").join("options.ts"), option_names())
}

/// The member names of each options object (src/options.rs), for lib/args.ts
/// to name a member whose value cannot cross as JSON.
fn option_names() -> String {
    let list = |names: &[&str]| names.iter().map(|n| format!("'{n}'")).collect::<Vec<_>>().join(", ");
    format!(
        "// Generated by `npm run codegen` from src/options.rs. Do not edit this file manually.\n\n\
         /** `HookRuntime.open`'s option names (`RuntimeOptions`). */\n\
         export const RUNTIME_OPTIONS = [{}] as const\n\n\
         /** `HookJournal.open`'s option names (`JournalOpenOptions`). */\n\
         export const JOURNAL_OPEN_OPTIONS = [{}] as const\n",
        list(options::RuntimeOptions::MEMBERS),
        list(options::JournalOpenOptions::MEMBERS),
    )
}

fn bindings(dir: &Path) -> Res {
    clear(dir, ".ts")?;
    let cfg = Config::new().with_out_dir(dir);
    for (i, export) in TS_TYPES.iter().enumerate() {
        export(&cfg).map_err(|e| format!("ts-rs export #{i}: {e}"))?;
    }
    document_json_value(dir)?;
    let mut files = Vec::new();
    list(dir, dir, &mut files)?;
    let mut index =
        String::from("// Generated by `npm run codegen` (src/bin/codegen.rs). Do not edit this file manually.\n");
    for rel in &files {
        if fs::read_to_string(dir.join(format!("{rel}.ts")))?.contains("bigint") {
            return Err(format!("bindings/{rel}.ts contains bigint").into());
        }
        index.push_str(&format!("export type * from './{rel}';\n"));
    }
    write(&dir.join("index.ts"), index)
}

/// ts-rs writes serde_json's `JsonValue` without a doc comment, and the
/// package exports every binding: give it one, so no export hovers empty.
fn document_json_value(dir: &Path) -> Res {
    let path = dir.join("serde_json").join("JsonValue.ts");
    let Ok(text) = fs::read_to_string(&path) else { return Ok(()) };
    let declaration = "export type JsonValue =";
    let doc = "/** Any value JSON can hold: a payload or another document member the contract leaves open. */\n";
    write(&path, text.replacen(declaration, &format!("{doc}{declaration}"), 1))
}

fn schemas(dir: &Path) -> Res {
    clear(dir, ".schema.json")?;
    write_schemas(dir, SCHEMAS, "urn:loopx-hooks:schema:")?;
    write_schemas(&dir.join("shipped"), SHIPPED_SCHEMAS, &format!("urn:loopx-hooks:schema:{}:", shipped::DIALECT))
}

fn write_schemas(dir: &Path, list: &[(&str, MakeSchema)], urn: &str) -> Res {
    for (name, generate) in list {
        let mut schema = generate().to_value();
        let obj = schema.as_object_mut().ok_or("schema is not an object")?;
        obj.insert("$id".into(), format!("{urn}{name}").into());
        obj.insert("title".into(), (*name).into());
        write(&dir.join(format!("{name}.schema.json")), pretty(&sorted(schema))?)?;
    }
    Ok(())
}

/// JSON Schema 2020-12, without schemars' non-standard formats (`uint32`, ...).
fn schema<T: JsonSchema>() -> Schema {
    SchemaSettings::draft2020_12()
        .with_transform(RestrictFormats::default())
        .into_generator()
        .into_root_schema_for::<T>()
}

fn examples(dir: &Path) -> Res {
    clear(dir, ".json")?;
    // RFC section 6, verbatim.
    let registration: PostWritebackHookRegistration = serde_json::from_value(json!({
        "schema_version": "loopx_post_writeback_capability_hook_registration_v0",
        "hook_id": "periodic_report.runtime_trigger",
        "capability_id": "periodic_report",
        "phase": "post_writeback",
        "event_kinds": ["todo_completed", "replan_recorded"],
        "intent_kinds": ["periodic_report.trigger_evaluation"],
        "requested_read_scope": ["settlement_identity", "bounded_event_projection"],
        "budget": {
            "max_invocations_per_dispatch": 1,
            "max_intents_per_dispatch": 1,
            "max_result_bytes": 16384,
            "timeout_ms": 1000
        },
        "failure_policy": "isolate"
    }))?;
    let intent_kind: IntentKindDefinition = serde_json::from_value(json!({
        "intent_kind": "periodic_report.trigger_evaluation",
        "capability_id": "periodic_report",
        "operations": ["evaluate_runtime_trigger"],
        "payload_schema": {
            "type": "object",
            "properties": {
                "segment_ref": { "type": "string", "format": "opaque_ref" },
                "source_event_refs": {
                    "type": "array",
                    "items": { "type": "string", "format": "opaque_ref" },
                    "maxItems": 32,
                    "uniqueItems": true
                }
            },
            "required": ["segment_ref", "source_event_refs"],
            "additionalProperties": false
        }
    }))?;

    // RFC section 7, with the dispatch id of the registration above.
    let registration_digest = identity::registration_digest(&serde_json::to_value(&registration)?);
    let (receipt_id, effect_id, event_kind) = ("receipt_opaque", "effect_opaque", EventKind::TodoCompleted);
    let dispatch_id = identity::dispatch_id(&identity::DispatchIdentity {
        receipt_id,
        effect_id,
        hook_id: &registration.hook_id,
        capability_id: &registration.capability_id,
        registration_digest: &registration_digest,
        registration_schema_version: RegistrationSchemaVersion::VALUE,
        event_kind: event_kind.as_str(),
    });
    let hook_input: PostWritebackHookInput = serde_json::from_value(json!({
        "schema_version": "loopx_post_writeback_hook_input_v0",
        "dispatch_id": dispatch_id,
        "hook_id": "periodic_report.runtime_trigger",
        "capability_id": "periodic_report",
        "source": {
            "receipt_id": receipt_id,
            "effect_id": effect_id,
            "step_kind": "durable_writeback",
            "goal_id": "goal_opaque",
            "agent_id": "agent_opaque",
            "todo_id": "todo_opaque",
            "turn_instance_id": "turn_opaque",
            "event_kind": event_kind,
            "state_revision": "revision_opaque",
            "committed_at": "2026-08-26T00:00:00Z"
        },
        "projection": {
            "schema_version": "loopx_post_writeback_event_projection_v0",
            "transition": "segment_completed",
            "fact_refs": ["fact_opaque"]
        },
        "boundary": BoundaryAttestation::default()
    }))?;

    // RFC section 8's intent, with its real ids, as the one proposed intent.
    let payload = json!({ "segment_ref": "segment_opaque", "source_event_refs": ["event_opaque"] });
    let intent_id = identity::intent_id(&dispatch_id, &intent_kind.intent_kind, "weekly_v0", &payload);
    let hook_result: PostWritebackHookResult = serde_json::from_value(json!({
        "schema_version": "loopx_post_writeback_hook_result_v0",
        "status": "proposed",
        "intents": [{
            "schema_version": "loopx_post_writeback_intent_v0",
            "intent_id": intent_id,
            "hook_id": "periodic_report.runtime_trigger",
            "capability_id": "periodic_report",
            "source_dispatch_id": dispatch_id,
            "intent_kind": "periodic_report.trigger_evaluation",
            "operation": "evaluate_runtime_trigger",
            "policy_version": "weekly_v0",
            "payload": payload,
            "budget": { "max_attempts": 1, "max_result_bytes": 16384 },
            "requested_write_scope": [],
            "failure_policy": "isolate",
            "grants_new_action_authority": false,
            "external_write_performed": false
        }]
    }))?;

    let receipt = DispatchReceipt {
        schema_version: DispatchReceiptSchemaVersion::V0,
        dispatch_id: dispatch_id.clone(),
        hook_id: registration.hook_id.clone(),
        capability_id: registration.capability_id.clone(),
        receipt_id: receipt_id.into(),
        effect_id: effect_id.into(),
        event_kind,
        registration_digest: registration_digest.clone(),
        status: DispatchStatus::Proposed,
        attempt: 1,
        intent_ids: vec![intent_id.clone()],
        result_digest: Some(identity::result_digest(&serde_json::to_value(&hook_result)?)),
        failure: None,
    };

    write(&dir.join("registration.json"), pretty(&registration)?)?;
    write(&dir.join("intent_kind.json"), pretty(&intent_kind)?)?;
    write(&dir.join("hook_input.json"), pretty(&hook_input)?)?;
    write(&dir.join("hook_result.json"), pretty(&hook_result)?)?;
    write(&dir.join("dispatch_receipt.json"), pretty(&receipt)?)?;
    turn_start_examples(dir)
}

/// A turn-start registration and an `ok` receipt of it.
fn turn_start_examples(dir: &Path) -> Res {
    let registration: turn_start::TurnStartHookRegistration = serde_json::from_value(json!({
        "schema_version": "loopx_turn_start_capability_hook_registration_v0",
        "hook_id": "team_inbox.turn_start_read",
        "capability_id": "team_inbox",
        "phase": "turn_start",
        "required_read": { "command": "loopx inbox read --pending" },
        "write_scopes": ["owner_private_inbox", "owner_private_cursor", "provider_message_reaction"],
        "budget": { "timeout_ms": 5000, "max_attempts_per_dispatch": 8, "max_routes": 4 },
        "failure_policy": "isolate"
    }))?;
    let receipt: turn_start::TurnStartReceipt = serde_json::from_value(json!({
        "schema_version": "loopx_turn_start_hook_receipt_v0",
        "hook_id": "team_inbox.turn_start_read",
        "status": "ok",
        "error_code": null,
        "agent_read_required": true,
        "observations_new": 2,
        "pending": 3,
        "direct_questions": 1,
        "verified_replies": 0,
        "routes_ok": 2,
        "routes_failed": 0,
        "reactions_added": 2,
        "external_writes_performed": 2
    }))?;
    // The examples are valid documents, not only well-typed ones.
    for (name, verdict) in [
        (
            "registration",
            turn_start::validate_turn_start_registration(&serde_json::to_value(&registration)?).map(|_| ()),
        ),
        ("receipt", turn_start::validate_turn_start_receipt(&serde_json::to_value(&receipt)?).map(|_| ())),
    ] {
        verdict.map_err(|v| format!("turn-start example {name} is invalid: {v:?}"))?;
    }
    write(&dir.join("turn_start_registration.json"), pretty(&registration)?)?;
    write(&dir.join("turn_start_receipt.json"), pretty(&receipt)?)
}

/// A copy of `v` with every object's keys in byte order, whatever serde_json's map is.
fn sorted(v: Value) -> Value {
    match v {
        Value::Object(map) => {
            let mut entries: Vec<_> = map.into_iter().collect();
            entries.sort_by(|a, b| a.0.cmp(&b.0));
            Value::Object(entries.into_iter().map(|(k, v)| (k, sorted(v))).collect())
        }
        Value::Array(items) => Value::Array(items.into_iter().map(sorted).collect()),
        other => other,
    }
}

fn pretty<T: Serialize>(v: &T) -> Res<String> {
    Ok(serde_json::to_string_pretty(v)? + "\n")
}

fn write(path: &Path, text: String) -> Res {
    fs::create_dir_all(path.parent().ok_or("no parent")?)?;
    fs::write(path, text).map_err(|e| format!("{}: {e}", path.display()).into())
}

/// Removes the generated files (`*suffix`, recursively, never `*.d.ts`) of a
/// previous run, so a type that is gone leaves no stale file behind.
fn clear(dir: &Path, suffix: &str) -> Res {
    let Ok(entries) = fs::read_dir(dir) else { return Ok(()) };
    for entry in entries {
        let path = entry?.path();
        if path.is_dir() {
            clear(&path, suffix)?;
            let _ = fs::remove_dir(&path); // only if now empty
        } else if path.to_string_lossy().ends_with(suffix) && !path.to_string_lossy().ends_with(".d.ts") {
            fs::remove_file(&path)?;
        }
    }
    Ok(())
}

/// The `.ts` files under `dir` (except `index.ts` and `*.d.ts`) as sorted `/`-separated paths without extension.
fn list(root: &Path, dir: &Path, out: &mut Vec<String>) -> Res {
    for entry in fs::read_dir(dir)? {
        let path = entry?.path();
        if path.is_dir() {
            list(root, &path, out)?;
        } else if let Some(rel) = path.strip_prefix(root)?.to_str().and_then(|p| p.strip_suffix(".ts")) {
            if rel != "index" && !rel.ends_with(".d") {
                out.push(rel.replace('\\', "/"));
            }
        }
    }
    out.sort();
    Ok(())
}
