//! What a dispatch starts from, in the dialect of the runtime that was
//! handed it, and the engine's questions to it: which event it is, whether
//! it is admitted, each hook's identity and input, and what the journal
//! keeps of it for recovery. Every answer is its dialect's; the engine never
//! looks inside.

use serde_json::Value;

use super::projection::{dispatch_id_for, project, recoverable_request};
use super::registry::{HookContract, RegisteredHook};
use super::request::{admit, AdmissionRefusal, DispatchRequest, NotADispatchRequest};
use super::shipped::{self, ShippedSource};
use crate::contract::Dialect;
use crate::journal::Checkpoint;
use crate::validate::Violation;

#[derive(Clone, Debug, PartialEq)]
pub enum Source {
    ContractV0(Box<DispatchRequest>),
    LoopxShippedV0(Box<ShippedSource>),
}

impl From<DispatchRequest> for Source {
    fn from(r: DispatchRequest) -> Self {
        Source::ContractV0(Box::new(r))
    }
}

impl From<&DispatchRequest> for Source {
    fn from(r: &DispatchRequest) -> Self {
        Source::ContractV0(Box::new(r.clone()))
    }
}

impl Source {
    pub fn dialect(&self) -> Dialect {
        match self {
            Source::ContractV0(_) => Dialect::ContractV0,
            Source::LoopxShippedV0(_) => Dialect::LoopxShippedV0,
        }
    }

    pub fn event_kind(&self) -> &str {
        match self {
            Source::ContractV0(r) => &r.event.event_kind,
            Source::LoopxShippedV0(s) => match &**s {
                ShippedSource::Admissible { source, .. } => &source.event_kind,
                ShippedSource::Refused(_) => "",
            },
        }
    }

    /// Admission: a refusal invokes nothing and records nothing.
    pub fn admit(&self, phase_enabled: bool) -> Result<(), AdmissionRefusal> {
        match self {
            Source::ContractV0(r) => admit(r, phase_enabled),
            Source::LoopxShippedV0(s) => match &**s {
                ShippedSource::Refused(refusal) => Err(*refusal),
                ShippedSource::Admissible { .. } if !phase_enabled => Err(AdmissionRefusal::PhaseDisabled),
                ShippedSource::Admissible { .. } => Ok(()),
            },
        }
    }

    /// The dispatch identity of `hook` for this source.
    pub fn dispatch_id(&self, hook: &RegisteredHook) -> String {
        match (self, &hook.contract) {
            (Source::ContractV0(r), HookContract::ContractV0(_)) => dispatch_id_for(r, hook),
            (Source::LoopxShippedV0(s), HookContract::LoopxShippedV0(reg)) => match &**s {
                ShippedSource::Admissible { source, event_id } => shipped::dispatch_id(source, event_id, reg),
                ShippedSource::Refused(_) => String::new(),
            },
            // A runtime installs and admits one dialect only.
            _ => String::new(),
        }
    }

    /// The input `hook` receives, proven public-safe by its dialect's validator.
    pub fn input(&self, hook: &RegisteredHook, dispatch_id: &str) -> Result<Value, Vec<Violation>> {
        match (self, &hook.contract) {
            (Source::ContractV0(r), HookContract::ContractV0(reg)) => project(r, reg, &hook.digest, dispatch_id),
            (Source::LoopxShippedV0(s), HookContract::LoopxShippedV0(reg)) => match &**s {
                ShippedSource::Admissible { source, event_id } => {
                    crate::shipped::hook_input(source, event_id, reg).map_err(|v| v.into_vec())
                }
                ShippedSource::Refused(_) => Err(Vec::new()),
            },
            _ => Err(Vec::new()),
        }
    }

    /// The checkpoint of `hook`'s identity preceding invocation `attempt`
    /// (0: deferred). Its request is what recovery needs of the source for
    /// that hook and nothing more.
    pub fn checkpoint(&self, hook: &RegisteredHook, dispatch_id: &str, attempt: u32) -> Checkpoint {
        let (receipt_id, effect_id, recorded_at, request_json) = match (self, &hook.contract) {
            (Source::ContractV0(r), HookContract::ContractV0(reg)) => (
                r.receipt.receipt_id.clone(),
                r.receipt.effect_id.clone(),
                None,
                serde_json::to_string(&recoverable_request(r, reg)).unwrap_or_default(),
            ),
            (Source::LoopxShippedV0(s), HookContract::LoopxShippedV0(reg)) => match &**s {
                ShippedSource::Admissible { source, event_id } => (
                    event_id.clone(),
                    source.identity.effect_id.clone(),
                    Some(source.committed_at.clone()),
                    shipped::recoverable_source(source, reg),
                ),
                ShippedSource::Refused(_) => Default::default(),
            },
            // Never planned: the journal refuses the empty ids.
            _ => Default::default(),
        };
        Checkpoint {
            dispatch_id: dispatch_id.to_owned(),
            hook_id: hook.hook_id.clone(),
            capability_id: hook.capability_id.clone(),
            receipt_id,
            effect_id,
            event_kind: self.event_kind().to_owned(),
            registration_digest: hook.digest.clone(),
            dialect: self.dialect(),
            recorded_at,
            request_json,
            attempt,
        }
    }

    /// A source the journal kept for recovery (a checkpoint's request).
    pub fn from_stored(dialect: Dialect, text: &str) -> Option<Source> {
        Source::from_json(dialect, text).ok()
    }

    /// The source in `text`, in `dialect`'s shape. The orchestrator builds
    /// it from its own receipt, so text that is not one is the caller's
    /// misuse: an error, not an outcome. What is inside is admission's and
    /// the input validator's to judge.
    pub fn from_json(dialect: Dialect, text: &str) -> Result<Source, NotADispatchRequest> {
        match dialect {
            Dialect::ContractV0 => DispatchRequest::from_json(text).map(Source::from),
            Dialect::LoopxShippedV0 => ShippedSource::parse(text).map(|s| Source::LoopxShippedV0(Box::new(s))),
        }
    }

    /// The source as JSON text, in its dialect's shape.
    pub fn to_json(&self) -> String {
        match self {
            Source::ContractV0(r) => serde_json::to_string(r).unwrap_or_default(),
            Source::LoopxShippedV0(s) => match &**s {
                ShippedSource::Admissible { source, .. } => serde_json::to_string(source).unwrap_or_default(),
                ShippedSource::Refused(_) => "null".into(),
            },
        }
    }
}
