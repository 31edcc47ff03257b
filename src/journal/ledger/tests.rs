use super::slot::{HEADER, SLOT};
use super::*;
use crate::journal::tests::{checkpoint, TempDir};

fn own_path(l: &Ledger) -> PathBuf {
    l.lock().file.as_ref().unwrap().path.clone()
}

#[test]
fn a_noted_attempt_is_read_back_from_an_ended_process_and_a_cleared_one_is_not() {
    let dir = TempDir::new("ledger");
    let ended = Ledger::create(&dir.file("attempts")).unwrap();
    let (a, b, c) = (checkpoint("a"), checkpoint("b"), checkpoint("c"));
    ended.note(&a).unwrap();
    ended.note(&b).unwrap();
    let mut b2 = b.clone();
    b2.attempt = 2;
    ended.note(&b2).unwrap();
    ended.note(&c).unwrap();
    ended.clear(&c.dispatch_id);
    let reader = Ledger::create(&dir.file("attempts")).unwrap();
    // The writer's lock is held while it lives: not an orphan yet.
    assert!(reader.orphans().orphans.is_empty());
    // Dropping the file handle is what the end of a process does to its lock.
    drop(ended);
    let scan = reader.orphans();
    assert_eq!((scan.orphans.len(), scan.skipped), (1, 0));
    let mut got = scan.orphans[0].entries.clone();
    got.sort_by(|x, y| x.dispatch_id.cmp(&y.dispatch_id));
    let mut want = vec![a, b2];
    want.sort_by(|x, y| x.dispatch_id.cmp(&y.dispatch_id));
    assert_eq!(got, want);
    for o in scan.orphans {
        o.remove();
    }
    assert!(reader.orphans().orphans.is_empty());
    reader.close();
    assert!(!dir.file("attempts").exists(), "a clean close leaves no folder behind");
}

#[test]
fn a_torn_or_foreign_slot_is_skipped() {
    let dir = TempDir::new("ledger-torn");
    let ended = Ledger::create(&dir.file("attempts")).unwrap();
    ended.note(&checkpoint("a")).unwrap();
    ended.note(&checkpoint("b")).unwrap();
    let path = own_path(&ended);
    drop(ended);
    let mut bytes = std::fs::read(&path).unwrap();
    bytes[HEADER + 10] ^= 0xff; // slot 0's payload, torn
    bytes.truncate(SLOT as usize + HEADER + 20); // slot 1 cut short
    bytes.extend_from_slice(&[7; 100]);
    std::fs::write(&path, &bytes).unwrap();
    std::fs::write(dir.file("attempts").join("junk.ledger"), b"LXA1 not a ledger").unwrap();
    let reader = Ledger::create(&dir.file("attempts")).unwrap();
    let scan = reader.orphans();
    assert_eq!(scan.orphans.len(), 2);
    assert!(scan.orphans.iter().all(|o| o.entries.is_empty()));
}

#[cfg(unix)]
fn mkfifo(path: &Path) {
    let c = std::ffi::CString::new(path.as_os_str().as_encoded_bytes()).unwrap();
    // SAFETY: a valid NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
}

#[cfg(unix)]
#[test]
fn what_is_not_a_regular_file_of_this_user_is_skipped_unread_and_never_blocks() {
    let dir = TempDir::new("ledger-hostile");
    let folder = dir.file("attempts");
    let reader = Ledger::create(&folder).unwrap();
    mkfifo(&folder.join("1-1.ledger"));
    mkfifo(&dir.file("elsewhere.fifo"));
    std::os::unix::fs::symlink(dir.file("elsewhere.fifo"), folder.join("2-2.ledger")).unwrap();
    std::fs::create_dir(folder.join("3-3.ledger")).unwrap();
    // A symlink to a real ledger of an ended process is not followed either.
    let ended = Ledger::create(&dir.file("other")).unwrap();
    ended.note(&checkpoint("a")).unwrap();
    let target = own_path(&ended);
    drop(ended);
    std::os::unix::fs::symlink(&target, folder.join("4-4.ledger")).unwrap();
    let mut planted = 4;
    // SAFETY: geteuid cannot fail.
    if unsafe { libc::geteuid() } == 0 {
        // Another user's file, planted as root can.
        let foreign = folder.join("5-5.ledger");
        std::fs::copy(&target, &foreign).unwrap();
        std::os::unix::fs::chown(&foreign, Some(65534), Some(65534)).unwrap();
        planted += 1;
    }
    let scan = reader.orphans();
    assert!(scan.orphans.is_empty());
    assert_eq!(scan.skipped, planted);
    for name in ["1-1.ledger", "2-2.ledger", "3-3.ledger", "4-4.ledger"] {
        assert!(std::fs::symlink_metadata(folder.join(name)).is_ok(), "{name} is left alone");
    }
}

#[cfg(unix)]
#[test]
fn a_folder_that_is_a_symlink_or_open_to_others_is_refused() {
    use std::os::unix::fs::PermissionsExt;
    let dir = TempDir::new("ledger-folder");
    std::fs::create_dir(dir.file("target")).unwrap();
    std::os::unix::fs::symlink(dir.file("target"), dir.file("linked")).unwrap();
    let e = Ledger::create(&dir.file("linked")).err().unwrap();
    assert_eq!(e, JournalError::Io { kind: std::io::ErrorKind::PermissionDenied });
    assert_eq!(std::fs::read_dir(dir.file("target")).unwrap().count(), 0, "nothing written through the link");
    std::fs::create_dir(dir.file("open")).unwrap();
    std::fs::set_permissions(dir.file("open"), std::fs::Permissions::from_mode(0o777)).unwrap();
    assert!(Ledger::create(&dir.file("open")).is_err());
    assert_eq!(std::fs::read_dir(dir.file("open")).unwrap().count(), 0);
}

#[cfg(target_os = "linux")]
fn open_descriptors() -> usize {
    std::fs::read_dir("/proc/self/fd").unwrap().count()
}

#[cfg(target_os = "linux")]
#[test]
fn close_releases_the_descriptor_and_a_second_close_removes_nothing_a_newer_ledger_uses() {
    let dir = TempDir::new("ledger-close");
    let folder = dir.file("attempts");
    let first = Ledger::create(&folder).unwrap();
    first.close();
    let before = open_descriptors();
    for _ in 0..200 {
        let l = Ledger::create(&folder).unwrap();
        l.note(&checkpoint("a")).unwrap();
        l.clear(&checkpoint("a").dispatch_id);
        l.close();
        assert_eq!(l.note(&checkpoint("b")), Err(JournalError::Closed));
    }
    // Other tests' threads open files meanwhile; 200 kept descriptors would show.
    assert!(open_descriptors() < before + 50, "close gives its descriptor back");
    let newer = Ledger::create(&folder).unwrap();
    first.close();
    assert!(own_path(&newer).exists());
}

#[test]
fn a_ledger_in_memory_keeps_what_was_noted_and_writes_no_file() {
    let l = Ledger::in_memory();
    let c = checkpoint("a");
    l.note(&c).unwrap();
    assert_eq!(l.noted(&c.dispatch_id), Some(c.clone()));
    assert!(l.orphans().orphans.is_empty());
    l.clear(&c.dispatch_id);
    assert_eq!(l.noted(&c.dispatch_id), None);
}

/// A slot as the ledger file holds it: `magic`, the payload's length, its checksum, the payload.
fn slot_bytes(magic: &[u8; 4], payload: &str, sum: u64) -> Vec<u8> {
    let mut slot = magic.to_vec();
    slot.extend_from_slice(&(payload.len() as u32).to_le_bytes());
    slot.extend_from_slice(&sum.to_le_bytes());
    slot.extend_from_slice(payload.as_bytes());
    slot
}

const FNV_OFFSET: u64 = 0xcbf2_9ce4_8422_2325;
const FNV_PRIME: u64 = 0x0100_0000_01b3;

/// A slot's bytes are its header and the entry's JSON, field for field as
/// ledgers already on disk hold them: a ledger written now reads back, and
/// so does one an earlier version wrote (`LXA1`: the request as a string,
/// the checksum byte by byte; before that, without dialect or commit time).
#[test]
fn a_slot_is_its_header_and_the_entry_s_json_in_the_format_on_disk() {
    let mut c = checkpoint("golden");
    // JSON, as `note` checks first: embedded as it is in the slot.
    c.request_json = r#"{"a":"q\"uote \\ tab\té"}"#.into();
    c.recorded_at = Some("2026-08-26T00:00:00Z".into());
    c.attempt = 3;
    let bytes = super::slot::encode(&c).unwrap();
    let members = format!(
        concat!(
            r#""dispatch_id":"{}","hook_id":"periodic_report.runtime_trigger","capability_id":"periodic_report","#,
            r#""receipt_id":"receipt_golden","effect_id":"effect_golden","event_kind":"todo_completed","#,
            r#""registration_digest":"{}","dialect":"contract-v0","recorded_at":"2026-08-26T00:00:00Z","#,
        ),
        c.dispatch_id, c.registration_digest
    );
    let payload = format!(r#"{{{members}"attempt":3,"request_json":{{"a":"q\"uote \\ tab\té"}}}}"#);
    // 8-byte words, the tail bytes folded one by one.
    let mut words = payload.as_bytes().chunks_exact(8);
    let sum =
        words.by_ref().fold(FNV_OFFSET, |h, w| (h ^ u64::from_le_bytes(w.try_into().unwrap())).wrapping_mul(FNV_PRIME));
    let sum = words.remainder().iter().fold(sum, |h, b| (h ^ u64::from(*b)).wrapping_mul(FNV_PRIME));
    assert_eq!(bytes, slot_bytes(b"LXA2", &payload, sum));
    assert_eq!(super::slot::entries(&bytes), vec![c.clone()]);

    let bytewise = |text: &str| text.bytes().fold(FNV_OFFSET, |h, b| (h ^ u64::from(b)).wrapping_mul(FNV_PRIME));
    let v1 = format!(r#"{{{members}"request_json":"{{\"a\":\"q\\\"uote \\\\ tab\\té\"}}","attempt":3}}"#);
    assert_eq!(super::slot::entries(&slot_bytes(b"LXA1", &v1, bytewise(&v1))), vec![c.clone()]);
    // Each magic with its own checksum only.
    assert!(super::slot::entries(&slot_bytes(b"LXA1", &v1, sum)).is_empty());
    assert!(super::slot::entries(&slot_bytes(b"LXA2", &payload, bytewise(&payload))).is_empty());
    // A ledger written before dialects and commit times: neither field.
    let old = v1.replace(r#""dialect":"contract-v0","recorded_at":"2026-08-26T00:00:00Z","#, "");
    let mut older = c.clone();
    older.recorded_at = None;
    assert_eq!(super::slot::entries(&slot_bytes(b"LXA1", &old, bytewise(&old))), vec![older]);

    // A request too large for a slot is left out; the attempt still counts.
    c.request_json = format!("\"{}\"", "x".repeat(SLOT as usize));
    let bytes = super::slot::encode(&c).unwrap();
    assert!(bytes.len() <= SLOT as usize);
    c.request_json = "null".into();
    assert_eq!(super::slot::entries(&bytes), vec![c]);
}
