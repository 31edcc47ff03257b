//! Hooks installed at the composition root. A registration is validated
//! before anything can invoke its provider; order of registration never
//! matters because hooks are kept in byte order of hook_id.

use std::sync::Arc;

use serde_json::Value;

use super::provider::Provider;
use crate::contract::PostWritebackHookRegistration;
use crate::identity;
use crate::validate::{validate_registration, IntentKinds, Rule, Violation, Violations};

/// One installed hook with what dispatch needs precomputed.
pub struct RegisteredHook {
    pub registration: PostWritebackHookRegistration,
    /// sha256 of the registration's canonical JSON: part of every dispatch identity.
    pub digest: String,
    /// `None` when the caller of the dispatch steps invokes it (a JS function).
    pub provider: Option<Arc<dyn Provider>>,
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
        doc: &Value,
        kinds: &IntentKinds,
        provider: Option<Arc<dyn Provider>>,
    ) -> Result<Arc<RegisteredHook>, Violations> {
        let registration = validate_registration(doc, kinds)?;
        if self.hooks.iter().any(|h| h.registration.hook_id == registration.hook_id) {
            return Err(vec![Violation { path: "/hook_id".into(), rule: Rule::DuplicateItem }].into());
        }
        let hook = Arc::new(RegisteredHook { digest: identity::registration_digest(doc), registration, provider });
        let at =
            self.hooks.partition_point(|h| h.registration.hook_id.as_bytes() < hook.registration.hook_id.as_bytes());
        self.hooks.insert(at, hook.clone());
        Ok(hook)
    }

    /// Hooks subscribed to `event_kind`, in hook_id order.
    pub fn subscribed<'a>(&'a self, event_kind: &'a str) -> impl Iterator<Item = &'a Arc<RegisteredHook>> + 'a {
        self.hooks.iter().filter(move |h| h.registration.event_kinds.iter().any(|k| k.as_str() == event_kind))
    }

    /// The installed hook with this id and registration digest, if any.
    pub fn find(&self, hook_id: &str, digest: &str) -> Option<&Arc<RegisteredHook>> {
        self.hooks.iter().find(|h| h.registration.hook_id == hook_id && h.digest == digest)
    }

    pub fn len(&self) -> usize {
        self.hooks.len()
    }

    pub fn is_empty(&self) -> bool {
        self.hooks.is_empty()
    }
}
