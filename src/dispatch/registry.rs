//! Hooks installed at the composition root. A registration is validated
//! before anything can invoke its provider; order of registration never
//! matters because hooks are kept in byte order of hook_id.

use std::sync::Arc;

use serde_json::Value;

use super::dialect::{DialectRules, RegisteredHook};
use super::provider::Provider;
use crate::validate::{IntentKinds, Rule, Violation, Violations};

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
        rules: &'static dyn DialectRules,
        doc: &Value,
        kinds: &IntentKinds,
        provider: Option<Arc<dyn Provider>>,
    ) -> Result<Arc<RegisteredHook>, Violations> {
        let hook = RegisteredHook::new(rules, doc, kinds, provider)?;
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
