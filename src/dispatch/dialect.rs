//! The one seam between the engine and a dialect. The engine (admission
//! order, claims, budgets, the journal, the writer, outcomes) is shared; a
//! dialect answers its questions about documents: parse the source, derive
//! the ids, build the input, judge the result, write the stored record,
//! build the receipt and the dispatch result. Each dialect is one
//! implementation in `crate::dialect`; the engine never names one. The two
//! values the engine carries for a dialect live here too: a [`Source`] and
//! a [`RegisteredHook`], each holding its dialect's document.

use std::any::Any;
use std::sync::Arc;

use serde_json::Value;

use super::judged::{Accepted, Failure};
use super::outcome::{DispatchOutcome, HookOutcome};
use super::provider::Provider;
use super::request::{AdmissionRefusal, NotADispatchRequest};
use crate::contract::{Dialect, DispatchStatus, FailureDetail};
use crate::journal::{Checkpoint, DispatchRow, KeyOf, StoredIntent};
use crate::validate::{IntentKinds, Violation, Violations};

/// What a checkpoint keeps of a source for one hook: the journal's
/// `receipt_id`, `effect_id` and `recorded_at` columns and the request
/// recovery re-dispatches (only what that hook reads).
#[derive(Default)]
pub struct CheckpointParts {
    pub receipt_id: String,
    pub effect_id: String,
    pub recorded_at: Option<String>,
    pub request_json: String,
}

/// A dialect's answers. Its documents travel inside [`Source`] and
/// [`RegisteredHook`] as values only it reads back (`Source::doc`,
/// `RegisteredHook::registration`); a runtime installs and admits one
/// dialect only, so a document of another is never handed to it.
pub trait DialectRules: Send + Sync + 'static {
    fn dialect(&self) -> Dialect;

    // The source.
    /// `text` in this dialect's source shape; text that is not one is the
    /// caller's misuse (an error, not an outcome).
    fn parse_source(&'static self, text: &str) -> Result<Source, NotADispatchRequest>;
    /// What a misuse error says the text is not (`request does not have the ... shape`).
    fn source_shape(&self) -> &'static str;
    fn source_json(&self, source: &Source) -> String;
    fn event_kind<'s>(&self, source: &'s Source) -> &'s str;
    /// Admission: a refusal invokes nothing and records nothing.
    fn admit(&self, source: &Source, phase_enabled: bool) -> Result<(), AdmissionRefusal>;

    // The hooks and their ids.
    /// Validates `doc` and precomputes what dispatch needs of the hook.
    fn register(
        &'static self,
        doc: &Value,
        kinds: &IntentKinds,
        provider: Option<Arc<dyn Provider>>,
    ) -> Result<RegisteredHook, Violations>;
    fn dispatch_id(&self, source: &Source, hook: &RegisteredHook) -> String;
    /// The input `hook` receives, proven public-safe by the dialect's validator.
    fn input(&self, source: &Source, hook: &RegisteredHook, dispatch_id: &str) -> Result<Value, Vec<Violation>>;
    fn checkpoint_parts(&self, source: &Source, hook: &RegisteredHook) -> CheckpointParts;

    // The result.
    /// What a call the dispatch's wall budget cut short failed with.
    fn wall_exceeded(&self) -> Failure;
    /// How deep a reply's document may nest: serde_json's own limit unless
    /// the dialect's documents go deeper.
    fn max_result_depth(&self) -> usize {
        crate::validate::text::MAX_DEPTH
    }
    /// Judges a reply's JSON document against the hook's registration.
    fn accept(
        &self,
        doc: &Value,
        hook: &RegisteredHook,
        kinds: &IntentKinds,
        dispatch_id: &str,
        source: &Source,
    ) -> Result<Accepted, Failure>;
    /// An identity whose attempts are spent: `None` records an exhausted
    /// receipt; `Some` isolates it with that failure and records nothing.
    fn attempts_spent(&self) -> Option<Failure>;
    /// Whether a dispatch planned so may run at all, asked once per dispatch
    /// (its hooks in hook_id order) before any provider runs or anything is
    /// written: `Some(f)` refuses it whole, every hook failing with `f`.
    fn admit_batch(&self, _planned: &[PlannedHook<'_>], _registered: u32) -> Option<Failure> {
        None
    }
    /// Reads the key of a final row's intent, for a dialect whose intents
    /// carry one that a dispatch hands out once (see `keys.rs`).
    fn key_of(&self) -> Option<KeyOf> {
        None
    }

    // The receipts and the stored record.
    /// The dialect's own part of a fresh hook outcome.
    fn fresh_outcome(&self, o: &mut HookOutcome, hook: &RegisteredHook);
    /// The dialect's own part of an outcome that failed with `f`.
    fn failed_outcome(&self, o: &mut HookOutcome, f: &Failure);
    /// Sets the receipt a record of `o`'s hook writes.
    fn set_receipt(
        &self,
        o: &mut HookOutcome,
        source: &Source,
        hook: &RegisteredHook,
        status: DispatchStatus,
        accepted: Option<&Accepted>,
        failure: Option<FailureDetail>,
    );
    /// Sets the receipt of a final row replayed (or found in conflict).
    fn final_receipt(&self, o: &mut HookOutcome, row: &DispatchRow, conflict: bool);
    /// The failure code a row of this dialect stores for `f`.
    fn stored_code(&self, f: &Failure) -> &'static str;
    /// A row's receipt as its document's JSON text, when it has one.
    fn receipt_json(&self, row: &DispatchRow) -> Option<String>;
    /// A stored intent's document as JSON text.
    fn intent_doc_json(&self, intent: &StoredIntent) -> Option<String>;

    // The dispatch result.
    /// The dialect's own dispatch result beside the engine's outcome, if it has one.
    fn dispatch_result(&self, outcome: &DispatchOutcome, registered: u32) -> Option<Value>;
}

/// One hook of a dispatch as planned, for [`DialectRules::admit_batch`].
pub struct PlannedHook<'a> {
    pub hook: &'a RegisteredHook,
    pub dispatch_id: &'a str,
    pub standing: Standing<'a>,
    /// Its identity's last attempt failed (its receipt was retryable).
    pub retried: bool,
}

/// Where a planned hook stands before any provider runs.
pub enum Standing<'a> {
    /// Its provider is to be called; `terminal` is its final row when the
    /// call verifies a replay.
    Call { terminal: Option<&'a DispatchRow> },
    /// Answered without a call: replayed, or failed.
    Done(&'a HookOutcome),
    /// Past a per-dispatch ceiling: not called, its identity kept owed.
    Deferred,
}

/// A dialect's document carried by the engine, read back only by its dialect.
pub type Doc = Arc<dyn Any + Send + Sync>;

/// A source: its dialect, and its document as that dialect parsed it.
#[derive(Clone)]
pub struct Source {
    rules: &'static dyn DialectRules,
    doc: Doc,
}

impl std::fmt::Debug for Source {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Source({}, {})", self.dialect().as_str(), self.to_json())
    }
}

impl PartialEq for Source {
    fn eq(&self, other: &Self) -> bool {
        self.dialect() == other.dialect() && self.to_json() == other.to_json()
    }
}

impl Source {
    /// A source of `rules`'s dialect holding `doc` (called by the dialect).
    pub fn new<T: std::any::Any + Send + Sync>(rules: &'static dyn DialectRules, doc: T) -> Self {
        Source { rules, doc: Arc::new(doc) }
    }

    /// The document, when it is a `T` (its dialect's own type).
    pub fn doc<T: std::any::Any>(&self) -> Option<&T> {
        self.doc.downcast_ref::<T>()
    }

    pub fn rules(&self) -> &'static dyn DialectRules {
        self.rules
    }

    pub fn dialect(&self) -> Dialect {
        self.rules.dialect()
    }

    pub fn event_kind(&self) -> &str {
        self.rules.event_kind(self)
    }

    /// Admission: a refusal invokes nothing and records nothing.
    pub fn admit(&self, phase_enabled: bool) -> Result<(), AdmissionRefusal> {
        self.rules.admit(self, phase_enabled)
    }

    /// The dispatch identity of `hook` for this source.
    pub fn dispatch_id(&self, hook: &RegisteredHook) -> String {
        self.rules.dispatch_id(self, hook)
    }

    /// The input `hook` receives, proven public-safe by its dialect's validator.
    pub fn input(&self, hook: &RegisteredHook, dispatch_id: &str) -> Result<Value, Vec<Violation>> {
        self.rules.input(self, hook, dispatch_id)
    }

    /// The checkpoint of `hook`'s identity preceding invocation `attempt`
    /// (0: deferred). Its request is what recovery needs of the source for
    /// that hook and nothing more.
    pub fn checkpoint(&self, hook: &RegisteredHook, dispatch_id: &str, attempt: u32) -> Checkpoint {
        let parts = self.rules.checkpoint_parts(self, hook);
        Checkpoint {
            dispatch_id: dispatch_id.to_owned(),
            hook_id: hook.hook_id.clone(),
            capability_id: hook.capability_id.clone(),
            receipt_id: parts.receipt_id,
            effect_id: parts.effect_id,
            event_kind: self.event_kind().to_owned(),
            registration_digest: hook.digest.clone(),
            dialect: self.dialect(),
            recorded_at: parts.recorded_at,
            request_json: parts.request_json,
            attempt,
        }
    }

    /// The source as JSON text, in its dialect's shape.
    pub fn to_json(&self) -> String {
        self.rules.source_json(self)
    }
}

/// One installed hook: what the engine needs of it, whatever its dialect,
/// precomputed, and the registration itself for what only its dialect knows
/// (the input projection, the result rules).
pub struct RegisteredHook {
    pub hook_id: String,
    pub capability_id: String,
    pub event_kinds: Vec<String>,
    /// Invocations the identity may use over its lifetime.
    pub max_attempts: u32,
    /// How long one call may take; `None` where the dialect has no hook
    /// timeout (the dispatch's wall budget bounds the call).
    pub timeout_ms: Option<u32>,
    pub max_result_bytes: u32,
    /// The registration's part of every dispatch identity, as its dialect derives it.
    pub digest: String,
    /// The dialect that registered it, which alone reads `registration`.
    pub rules: &'static dyn DialectRules,
    /// The registration document, as its dialect validated it.
    pub registration: Doc,
    /// `None` when the caller of the dispatch steps invokes it (a JS function).
    pub provider: Option<Arc<dyn Provider>>,
}

impl RegisteredHook {
    /// Validates `doc` in `rules`'s dialect and precomputes what dispatch needs.
    pub fn new(
        rules: &'static dyn DialectRules,
        doc: &Value,
        kinds: &IntentKinds,
        provider: Option<Arc<dyn Provider>>,
    ) -> Result<Self, Violations> {
        rules.register(doc, kinds, provider)
    }

    /// The registration, when it is a `T` (its dialect's own type).
    pub fn registration<T: std::any::Any>(&self) -> Option<&T> {
        self.registration.downcast_ref::<T>()
    }

    pub fn dialect(&self) -> Dialect {
        self.rules.dialect()
    }
}
