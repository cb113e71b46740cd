use super::*;
use raft::eraftpb::MessageType;

fn message(msg_type: MessageType, from: u64, to: u64, term: u64) -> Message {
    let mut m = Message::default();
    m.set_msg_type(msg_type);
    m.from = from;
    m.to = to;
    m.term = term;
    m
}

fn carried(m: &Message) -> RaftRsMsg {
    RaftRsMsg::Raft(RaftMessage(Box::new(m.clone())))
}

/// Messages travel by value, but traces show what they showed when their protobuf
/// bytes travelled: the same one-line summary.
#[test]
fn a_carried_message_shows_in_traces_as_its_summary() {
    let mut append = message(MessageType::MsgAppend, 1, 3, 7);
    append.log_term = 6;
    append.index = 41;
    append.commit = 40;
    append.entries = vec![Entry::default(), Entry::default()].into();
    assert_eq!(
        format!("{:?}", carried(&append)),
        "MsgAppend 1->3 t7 lt6 i41 c40 +2"
    );
    let mut rejected = message(MessageType::MsgAppendResponse, 3, 1, 7);
    rejected.index = 41;
    rejected.reject = true;
    rejected.reject_hint = 38;
    assert_eq!(
        format!("{:?}", carried(&rejected)),
        "MsgAppendResponse 3->1 t7 lt0 i41 c0 reject(hint 38)"
    );
}

/// `Hash` and `Ord` of a carried message are those of its protobuf encoding (what the
/// bytes had), and equality agrees with them.
#[test]
fn carried_messages_order_and_hash_as_their_encoding() {
    use std::hash::{DefaultHasher, Hash, Hasher};
    let hash = |x: &dyn Fn(&mut DefaultHasher)| {
        let mut h = DefaultHasher::new();
        x(&mut h);
        h.finish()
    };
    let mut messages = vec![
        message(MessageType::MsgHeartbeat, 1, 2, 3),
        message(MessageType::MsgHeartbeat, 1, 2, 4),
        message(MessageType::MsgRequestVote, 2, 1, 3),
        message(MessageType::MsgAppend, 1, 5, 300),
    ];
    messages[3].entries = vec![Entry::default()].into();
    for a in &messages {
        let ra = RaftMessage(Box::new(a.clone()));
        let bytes = a.write_to_bytes().expect("encodes");
        assert_eq!(hash(&|h| ra.hash(h)), hash(&|h| bytes.hash(h)));
        for b in &messages {
            let rb = RaftMessage(Box::new(b.clone()));
            let other = b.write_to_bytes().expect("encodes");
            assert_eq!(ra.cmp(&rb), bytes.cmp(&other), "{a:?} vs {b:?}");
            assert_eq!(ra == rb, bytes == other);
        }
    }
}
