//! Standing approvals: bound to the plugin's sha256, kept across processes,
//! and shared by replicas that use one file.

use std::sync::Arc;

use corral::{ApprovalDecision, StandingApprovals};

use super::{DELETE_ALL, Scripted, builder, call, rebuild};
use crate::support::{HOSTILE, guest_sha256, plugin_dir};

/// Two hosts sharing one standing-approvals file, as two replicas: a grant
/// on one holds on the other, which opened the file before it was made, and
/// a read-only replica picks it up too but never writes the file.
#[tokio::test]
async fn replicas_sharing_standing_approvals_see_each_others_grants() {
    let dir = plugin_dir(&[HOSTILE]);
    let state = tempfile::tempdir().expect("temp dir");
    let standing = state.path().join("standing.json");
    let host_with = |reviewer: Arc<Scripted>, set: StandingApprovals| {
        let dir = dir.path().to_path_buf();
        async move {
            builder(&dir)
                .reviewer_arc(reviewer)
                .standing_approvals(set)
                .build()
                .await
                .expect("host")
        }
    };
    let (a_reviewer, b_reviewer, c_reviewer) = (
        Scripted::new([ApprovalDecision::ContinueAlways]),
        Scripted::new([]),
        Scripted::new([]),
    );
    let a = host_with(
        a_reviewer.clone(),
        StandingApprovals::file(&standing).expect("a"),
    )
    .await;
    let b = host_with(
        b_reviewer.clone(),
        StandingApprovals::file(&standing).expect("b"),
    )
    .await;
    let c = host_with(
        c_reviewer.clone(),
        StandingApprovals::file_read_only(&standing).expect("c"),
    )
    .await;

    call(&a, "gated", DELETE_ALL).await.expect("approved on a");
    call(&b, "gated", DELETE_ALL).await.expect("standing on b");
    call(&c, "gated", DELETE_ALL).await.expect("standing on c");
    assert_eq!(a_reviewer.seen().len(), 1);
    assert!(b_reviewer.seen().is_empty(), "b was not asked");
    assert!(c_reviewer.seen().is_empty(), "c was not asked");
    let written = std::fs::read_to_string(&standing).expect("the file");
    assert_eq!(written.matches("\"tool\"").count(), 1, "{written}");
}

#[tokio::test]
async fn a_standing_approval_ends_when_the_plugin_changes() {
    let dir = plugin_dir(&[HOSTILE]);
    let state = tempfile::tempdir().expect("temp dir");
    let standing = state.path().join("standing.json");
    let host_with = |reviewer: Arc<Scripted>| {
        let dir = dir.path().to_path_buf();
        let standing = standing.clone();
        async move {
            builder(&dir)
                .reviewer_arc(reviewer)
                .standing_approvals(StandingApprovals::file(&standing).expect("standing"))
                .build()
                .await
                .expect("host")
        }
    };

    let first = Scripted::new([ApprovalDecision::ContinueAlways]);
    let host = host_with(first.clone()).await;
    call(&host, "gated", DELETE_ALL).await.expect("approved");
    call(&host, "gated", DELETE_ALL).await.expect("standing");
    assert_eq!(
        first.seen().len(),
        1,
        "asked once, then the standing approval"
    );

    // A new process with the same file: still standing.
    let second = Scripted::new([]);
    let host = host_with(second.clone()).await;
    call(&host, "gated", DELETE_ALL).await.expect("standing");
    assert!(second.seen().is_empty());

    // The plugin file changes: its sha256 changes, the reviewer is asked again.
    rebuild(&dir.path().join(HOSTILE));
    let third = Scripted::new([ApprovalDecision::ExitEarly("new code".into())]);
    let host = host_with(third.clone()).await;
    let err = call(&host, "gated", DELETE_ALL).await.unwrap_err();
    assert_eq!(err.llm_text(), "Error: Rejected by reviewer: new code");
    assert_eq!(third.seen().len(), 1);
    assert_ne!(third.seen()[0].plugin_sha256, guest_sha256(HOSTILE));
}
