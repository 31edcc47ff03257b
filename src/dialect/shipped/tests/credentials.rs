//! A credential-like string anywhere in any shipped document, member name
//! or value, free-form projection and payload included, is
//! `credential_like_value`, and no violation repeats it.

use serde_json::{json, Value};

use super::*;
use crate::dialect::shipped::{
    validate_dispatch_result, validate_hook_input, validate_receipt, validate_result, validate_source, ResultContext,
};
use crate::validate::fixtures::{assert_one, violations, with};
use crate::validate::Rule::*;
use crate::validate::REDACTED;

const SECRET: &str = "ghp_0123456789abcdefABCDEF";

fn no_echo(paths: &[(String, crate::contract::Rule)]) {
    assert!(paths.iter().all(|(p, _)| !p.contains(SECRET)), "{paths:?}");
}

#[test]
fn in_every_field_of_every_document() {
    type Check = Box<dyn Fn(&Value) -> Vec<(String, crate::contract::Rule)>>;
    let docs: Vec<(Value, Check)> = vec![
        (super::registration(), Box::new(|d| violations(&crate::dialect::shipped::validate_registration(d)))),
        (source(), Box::new(|d| violations(&validate_source(d)))),
        (input(), Box::new(move |d| violations(&validate_hook_input(d, &typed_registration())))),
        (
            result(),
            Box::new(move |d| {
                let registration = typed_registration();
                violations(&validate_result(d, &ResultContext { registration: &registration, event_id: EVENT_ID }))
            }),
        ),
        (receipt(), Box::new(|d| violations(&validate_receipt(d)))),
        (dispatch_result(), Box::new(|d| violations(&validate_dispatch_result(d)))),
    ];
    for (doc, check) in &docs {
        assert!(check(doc).is_empty(), "fixture rejected: {:?}", check(doc));
        for path in string_paths(doc, "") {
            let found = check(&with(doc.clone(), &path, json!(SECRET)));
            assert!(found.contains(&(path.clone(), CredentialLikeValue)), "{path}: {found:?}");
            no_echo(&found);
        }
    }
}

/// Every string value's pointer in `v`.
fn string_paths(v: &Value, at: &str) -> Vec<String> {
    match v {
        Value::String(_) => vec![at.to_owned()],
        Value::Array(items) => {
            items.iter().enumerate().flat_map(|(i, x)| string_paths(x, &format!("{at}/{i}"))).collect()
        }
        Value::Object(map) => map
            .iter()
            .flat_map(|(k, x)| string_paths(x, &format!("{at}/{}", k.replace('~', "~0").replace('/', "~1"))))
            .collect(),
        _ => Vec::new(),
    }
}

#[test]
fn deep_in_free_form_values_and_in_member_names() {
    let deep = json!({ "a": [{ "b": { "c": [1, SECRET] } }] });
    assert_one(
        &validate_source(&with(source(), "/projection/stage_completion", deep.clone())),
        "/projection/stage_completion/a/0/b/c/1",
        CredentialLikeValue,
    );
    let registration = typed_registration();
    let ctx = ResultContext { registration: &registration, event_id: EVENT_ID };
    let named = with(result(), &format!("/intent/payload/{SECRET}"), json!(1));
    let found = violations(&validate_result(&named, &ctx));
    assert_eq!(found, vec![(format!("/intent/payload/{REDACTED}"), CredentialLikeValue)]);
    no_echo(&found);
    // An unknown member with a credential-like name is said once, redacted.
    assert_one(
        &validate_receipt(&with(receipt(), &format!("/{SECRET}"), json!(1))),
        &format!("/{REDACTED}"),
        CredentialLikeValue,
    );
    // In an input's projection the name is also outside the read scope.
    let found =
        violations(&validate_hook_input(&with(input(), &format!("/projection/{SECRET}"), json!(1)), &registration));
    assert_eq!(
        found,
        vec![
            (format!("/projection/{REDACTED}"), CredentialLikeValue),
            (format!("/projection/{REDACTED}"), NotAllowedValue)
        ]
    );
}
