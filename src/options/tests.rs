//! Each options object read from JSON: defaults, every member's refusal
//! naming the member and not its value, unknown names, and the journal target rule.

use super::*;
use crate::error_code::{Coded, ErrorCode};

const SECRET: &str = "planted_secret_value_7f3a";

fn runtime(text: &str) -> Result<RuntimeOptions, OptionError> {
    RuntimeOptions::parse("options", text)
}

fn refused(text: &str) -> String {
    let e = runtime(text).unwrap_err();
    let message = e.to_string();
    assert!(!message.contains(SECRET), "{message}");
    message
}

#[test]
fn a_path_alone_takes_every_default() {
    let o = runtime(r#"{"journal":"hooks.db"}"#).unwrap();
    assert_eq!(o.journal, JournalTarget::File("hooks.db".into()));
    assert_eq!(o.journal_options(), JournalOptions::default());
    assert_eq!((o.profile.clone(), o.dialect, o.sidecar_mirror.clone()), (None, None, None));
    assert_eq!(o.profile(), Profile::default());
}

/// A profile's members lie over the defaults of the runtime's dialect: a
/// shipped runtime sets no ceiling per dispatch unless told one.
#[test]
fn a_profile_names_only_what_it_changes_over_its_dialects_defaults() {
    let shipped = Profile::defaults_for(Dialect::LoopxShippedV0);
    let o = runtime(r#"{"journal":"j","dialect":"loopx-shipped-v0","profile":{"enabled":true}}"#).unwrap();
    assert_eq!(o.profile(), Profile { enabled: true, ..shipped.clone() });
    let o = runtime(r#"{"journal":"j","dialect":"loopx-shipped-v0","profile":{"maxHooksPerDispatch":3}}"#).unwrap();
    assert_eq!(o.profile(), Profile { max_hooks_per_dispatch: 3, ..shipped });
    let o = runtime(r#"{"journal":"j","profile":{"enabled":true}}"#).unwrap();
    assert_eq!(o.profile(), Profile { enabled: true, ..Profile::default() });
}

#[test]
fn a_postgres_url_goes_to_postgres_never_to_a_file_of_that_name() {
    for url in ["postgres://u@h/db", "postgresql://u@h/db"] {
        let o = runtime(&format!(r#"{{"journal":"{url}"}}"#)).unwrap();
        let JournalTarget::Postgres(pg) = o.journal else { panic!("{url} is a file") };
        assert_eq!((pg.connection_string.as_str(), pg.schema.as_str()), (url, DEFAULT_SCHEMA));
    }
    let o =
        runtime(r#"{"journal":{"postgres":{"connectionString":"x","schema":"s","statementTimeoutMs":7}}}"#).unwrap();
    let JournalTarget::Postgres(pg) = o.journal else { panic!("not postgres") };
    assert_eq!((pg.schema.as_str(), pg.limits.statement_timeout_ms), ("s", 7));
}

/// SQLite's `:memory:` is refused as an argument error, never opened as a
/// file of that name.
#[test]
fn memory_is_refused_never_a_file_of_that_name() {
    for (text, at) in [
        (r#"{"journal":":memory:"}"#, "options.journal"),
        (r#"{"journal":{"path":":memory:"}}"#, "options.journal.path"),
    ] {
        let e = runtime(text).unwrap_err();
        assert_eq!(e.error_code(), ErrorCode::InvalidArgument, "{text}");
        let message = e.to_string();
        assert!(message.starts_with(&format!("{at} must be")) && message.contains(":memory:"), "{message}");
    }
    assert_eq!(runtime(r#"{"journal":"./:memory:"}"#).unwrap().journal, JournalTarget::File("./:memory:".into()));
}

#[test]
fn every_member_is_read_into_what_core_takes() {
    let text = r#"{"journal":{"path":"j.db"},"profile":{"enabled":true},"synchronous":"normal","busyTimeoutMs":9,
        "attemptLedger":false,"inlineCommit":true,"dialect":"loopx-shipped-v0","sidecarMirror":"/root"}"#;
    let o = runtime(text).unwrap();
    assert!(o.profile().enabled);
    let expected =
        JournalOptions { synchronous_full: false, busy_timeout_ms: 9, attempt_ledger: false, inline_commit: true };
    assert_eq!(o.journal_options(), expected);
    assert_eq!(o.dialect, Some(Dialect::LoopxShippedV0));
    assert_eq!(o.sidecar_mirror.as_deref(), Some("/root"));
}

#[test]
fn a_bad_member_is_named_and_its_value_never_repeated() {
    let cases = [
        (String::from(r#"{"journal":42}"#), "options.journal must be a path"),
        (String::from(r#"{"journal":""}"#), "options.journal must be"),
        (format!(r#"{{"journal":"j","synchronous":"{SECRET}"}}"#), "options.synchronous must be 'full' or 'normal'"),
        (String::from(r#"{"journal":"j","busyTimeoutMs":-1}"#), "options.busyTimeoutMs must be an integer"),
        (String::from(r#"{"journal":"j","busyTimeoutMs":4294967296}"#), "options.busyTimeoutMs must be an integer"),
        (format!(r#"{{"journal":"j","attemptLedger":"{SECRET}"}}"#), "options.attemptLedger must be a boolean"),
        (format!(r#"{{"journal":"j","profile":{{"enabled":"{SECRET}"}}}}"#), "options.profile.enabled must be"),
        (format!(r#"{{"journal":"j","profile":["{SECRET}"]}}"#), "options.profile must be a JSON object"),
        (String::from(r#"{"journal":"j","sidecarMirror":"x"}"#), "options.sidecarMirror must be used with dialect"),
        (
            format!(r#"{{"journal":{{"postgres":{{"schema":"{SECRET}"}}}}}}"#),
            "options.journal.postgres.connectionString must be",
        ),
        (String::from("null"), "options must be an object"),
        (String::from("[1]"), "options must be an object"),
    ];
    for (text, expected) in cases {
        let message = refused(&text);
        assert!(message.starts_with(expected), "{text}: {message}");
    }
}

#[test]
fn an_unknown_dialect_has_its_own_code() {
    let e = runtime(&format!(r#"{{"journal":"j","dialect":"{SECRET}"}}"#)).unwrap_err();
    assert_eq!(e.error_code(), ErrorCode::UnknownDialect);
    assert!(!e.to_string().contains(SECRET));
    let e = runtime(r#"{"journal":"j","busyTimeoutMs":"x"}"#).unwrap_err();
    assert_eq!(e.error_code(), ErrorCode::InvalidArgument);
}

#[test]
fn an_unknown_name_is_refused_and_named_only_when_it_misspells_a_known_one() {
    let message = refused(&format!(r#"{{"journal":"j","{SECRET}":true}}"#));
    assert!(
        message.starts_with("options: unknown option (expected one of: journal, profile, synchronous,"),
        "{message}"
    );
    let message = refused(r#"{"journal":"j","profil":{}}"#);
    assert!(message.starts_with("options: unknown option 'profil' (expected one of: journal,"), "{message}");
    let message = refused(r#"{"journal":"j","BusyTimeoutMS":1}"#);
    assert!(message.contains("'BusyTimeoutMS'"), "{message}");
    // The option of earlier versions is not a second way to say it, and is far from `journal`.
    let message = refused(r#"{"journalPath":"j"}"#);
    assert!(message.starts_with("options: unknown option (expected one of: journal,"), "{message}");
    let message = refused(&format!(r#"{{"journal":{{"path":"j","{SECRET}":1}}}}"#));
    assert_eq!(message, "options.journal: unknown option (expected one of: path, postgres)");
    let message = refused(&format!(r#"{{"journal":{{"postgres":{{"connectionString":"x","{SECRET}":1}}}}}}"#));
    assert!(message.starts_with("options.journal.postgres: unknown option (expected one of: connectionString, schema,"));
}

#[test]
fn members_are_declared_once_in_order() {
    assert_eq!(
        RuntimeOptions::MEMBERS,
        [
            "journal",
            "profile",
            "synchronous",
            "busyTimeoutMs",
            "attemptLedger",
            "inlineCommit",
            "dialect",
            "sidecarMirror"
        ]
    );
    assert_eq!(
        PostgresOptions::MEMBERS,
        ["connectionString", "schema", "caFile", "statementTimeoutMs", "writeRetryMs"]
    );
}
