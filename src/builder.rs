//! The provider-side helper: a well-formed intent from what a provider
//! decides (kind, operation, policy version, payload), with every id and
//! fixed field filled in by core, so providers never hand-compute digests.

use serde_json::Value;

use crate::contract::{FailurePolicy, IntentBudget, IntentSchemaVersion, PostWritebackIntent};
use crate::identity;

/// Default declarative budget of a built intent (the RFC's example).
pub const DEFAULT_INTENT_BUDGET: IntentBudget = IntentBudget { max_attempts: 1, max_result_bytes: 16384 };

/// Where an intent comes from: the hook input it answers.
pub struct IntentOrigin<'a> {
    pub dispatch_id: &'a str,
    pub hook_id: &'a str,
    pub capability_id: &'a str,
}

/// What the provider chooses.
pub struct IntentSpec {
    pub intent_kind: String,
    pub operation: String,
    pub policy_version: String,
    pub payload: Value,
    pub budget: Option<IntentBudget>,
    pub requested_write_scope: Vec<String>,
}

/// Builds the intent. It does not validate: the dispatcher validates every
/// result, so a builder that judged too would be a second acceptance policy.
pub fn build_intent(origin: &IntentOrigin<'_>, spec: IntentSpec) -> PostWritebackIntent {
    let intent_id = identity::intent_id(origin.dispatch_id, &spec.intent_kind, &spec.policy_version, &spec.payload);
    PostWritebackIntent {
        schema_version: IntentSchemaVersion::V0,
        intent_id,
        hook_id: origin.hook_id.to_owned(),
        capability_id: origin.capability_id.to_owned(),
        source_dispatch_id: origin.dispatch_id.to_owned(),
        intent_kind: spec.intent_kind,
        operation: spec.operation,
        policy_version: spec.policy_version,
        payload: spec.payload,
        budget: spec.budget.unwrap_or(DEFAULT_INTENT_BUDGET),
        requested_write_scope: spec.requested_write_scope,
        failure_policy: FailurePolicy::Isolate,
        grants_new_action_authority: false,
        external_write_performed: false,
    }
}
