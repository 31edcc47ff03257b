//! Hooks installed at the composition root. A registration is validated
//! before anything can invoke its provider; order of registration never
//! matters because hooks are kept in byte order of hook_id.

use std::sync::Arc;

use serde_json::Value;

use super::provider::Provider;
use crate::contract::{Dialect, PostWritebackHookRegistration};
use crate::identity;
use crate::validate::{validate_registration, IntentKinds, Rule, Violation, Violations};

/// A hook's registration in the contract it was given in.
#[derive(Clone, Debug, PartialEq)]
pub enum HookContract {
    ContractV0(PostWritebackHookRegistration),
    LoopxShippedV0(crate::shipped::Registration),
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
    /// The registration's part of every dispatch identity: sha256 of its
    /// canonical JSON in contract-v0.
    pub digest: String,
    pub contract: HookContract,
    /// `None` when the caller of the dispatch steps invokes it (a JS function).
    pub provider: Option<Arc<dyn Provider>>,
}

impl RegisteredHook {
    /// Validates `doc` in `dialect` and precomputes what dispatch needs.
    pub fn new(
        dialect: Dialect,
        doc: &Value,
        kinds: &IntentKinds,
        provider: Option<Arc<dyn Provider>>,
    ) -> Result<Self, Violations> {
        match dialect {
            Dialect::ContractV0 => {
                let r = validate_registration(doc, kinds)?;
                Ok(Self::contract_v0(r, identity::registration_digest(doc), provider))
            }
            // Its intent kinds are names only: the shipped contract checks no payload schema.
            Dialect::LoopxShippedV0 => {
                let r = crate::shipped::validate_registration(doc)?;
                Ok(RegisteredHook {
                    hook_id: r.hook_id.clone(),
                    capability_id: r.capability_id.clone(),
                    event_kinds: r.event_kinds.clone(),
                    max_attempts: crate::shipped::MAX_ATTEMPT_COUNT,
                    timeout_ms: None,
                    max_result_bytes: r.budget.max_result_bytes,
                    digest: super::shipped::registration_digest(&r),
                    contract: HookContract::LoopxShippedV0(r),
                    provider,
                })
            }
        }
    }

    /// A contract-v0 hook over a registration already validated.
    pub(crate) fn contract_v0(
        r: PostWritebackHookRegistration,
        digest: String,
        provider: Option<Arc<dyn Provider>>,
    ) -> Self {
        RegisteredHook {
            hook_id: r.hook_id.clone(),
            capability_id: r.capability_id.clone(),
            event_kinds: r.event_kinds.iter().map(|k| k.as_str().to_owned()).collect(),
            max_attempts: r.budget.max_invocations_per_dispatch,
            timeout_ms: Some(r.budget.timeout_ms),
            max_result_bytes: r.budget.max_result_bytes,
            digest,
            contract: HookContract::ContractV0(r),
            provider,
        }
    }

    pub fn dialect(&self) -> Dialect {
        match self.contract {
            HookContract::ContractV0(_) => Dialect::ContractV0,
            HookContract::LoopxShippedV0(_) => Dialect::LoopxShippedV0,
        }
    }
}

/// The hooks, sorted by hook_id.
#[derive(Clone, Default)]
pub struct Registry {
    hooks: Vec<Arc<RegisteredHook>>,
}

impl Registry {
    /// Validates and installs. A malformed or over-budget registration, or a
    /// second registration of one hook_id, is rejected with its violations.
    pub fn register(
        &mut self,
        dialect: Dialect,
        doc: &Value,
        kinds: &IntentKinds,
        provider: Option<Arc<dyn Provider>>,
    ) -> Result<Arc<RegisteredHook>, Violations> {
        let hook = RegisteredHook::new(dialect, doc, kinds, provider)?;
        if self.hooks.iter().any(|h| h.hook_id == hook.hook_id) {
            return Err(vec![Violation { path: "/hook_id".into(), rule: Rule::DuplicateItem }].into());
        }
        let hook = Arc::new(hook);
        let at = self.hooks.partition_point(|h| h.hook_id.as_bytes() < hook.hook_id.as_bytes());
        self.hooks.insert(at, hook.clone());
        Ok(hook)
    }

    /// Hooks subscribed to `event_kind`, in hook_id order.
    pub fn subscribed<'a>(&'a self, event_kind: &'a str) -> impl Iterator<Item = &'a Arc<RegisteredHook>> + 'a {
        self.hooks.iter().filter(move |h| h.event_kinds.iter().any(|k| k == event_kind))
    }

    /// The installed hook with this id and registration digest, if any.
    pub fn find(&self, hook_id: &str, digest: &str) -> Option<&Arc<RegisteredHook>> {
        self.hooks.iter().find(|h| h.hook_id == hook_id && h.digest == digest)
    }

    pub fn len(&self) -> usize {
        self.hooks.len()
    }

    pub fn is_empty(&self) -> bool {
        self.hooks.is_empty()
    }
}
