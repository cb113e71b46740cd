//! Light tasks (tenure's addition to madsim 0.2.34).
//!
//! A light task runs a poll function shared by many tasks (`key` tells them apart, and
//! one byte of state is kept for each) instead of a future of its own. It is scheduled
//! exactly as madsim schedules an `async_task` task, with the same draws from the
//! runtime's random stream:
//!
//! * spawning it puts it on the ready queue (`Runnable::schedule`);
//! * waking it while it is idle puts it on the queue, while it is queued (or held by
//!   its paused node) does nothing, while it runs makes it queued again right after the
//!   run (as `async_task` reschedules a task woken during its poll);
//! * the executor takes it from the queue by the same random draw, drops it (killed
//!   node), sets it aside (paused node) or runs it, and advances the clock after it by
//!   the same 50-100 ns draw;
//! * killing its node wakes it (madsim wakes every task of a killed node so that the
//!   executor drops it), and the tasks a paused node set aside are dropped when it is
//!   killed or restarted.
//!
//! Two differences, neither met by tenure's node hosts (one task a node, which never
//! completes): a light task that completes (its poll returns `Ready`) ends, and that
//! is all, where a node's initial future that completes also exits its node (madsim's
//! `NodeBuilder::init` wraps it so); and a killed node wakes its light tasks after its
//! futures, not in the order they were spawned.
//!
//! What it saves: an `async_task` task is an allocation of its own (header, future,
//! metadata) plus a `TaskInfo`, and waking and running it touch them at three
//! different moments (the waker's clone when a timer is set, the wake, the run). A
//! light task is a few bytes in one table, and its waker is a number.

use super::{Item, NodeId};
use crate::time::TimeHandle;
use spin::Mutex;
use std::sync::{
    atomic::{AtomicU32, Ordering},
    Arc,
};
use std::task::{Context, Poll, RawWaker, RawWakerVTable, Waker};

/// What light tasks run: one value shared by many tasks, told apart by their keys.
pub trait Light: Send + Sync {
    /// Polls task `key`, with its byte of state (0 when spawned), the runtime's clock
    /// and the task's context.
    fn poll(&self, key: u32, state: &mut u8, time: &TimeHandle, cx: &mut Context<'_>) -> Poll<()>;

    /// Task `key` is the next to be woken by a timer: a hint to fetch the memory its
    /// run will read (see `crate::hint::prefetch`). Must change nothing.
    fn warm(&self, key: u32) {
        let _ = key;
    }

    /// The same task, after the run before it: what `warm` fetched has arrived, and
    /// what it points to can be fetched in turn. Must change nothing.
    fn warm_late(&self, key: u32) {
        let _ = key;
    }
}

/// A light task's poll function (see [`Light`]).
pub type LightFn = Arc<dyn Light>;

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
#[repr(u8)]
pub(crate) enum State {
    /// Waiting to be woken.
    Idle,
    /// On the ready queue, or in its paused node's waiting list.
    Scheduled,
    /// Being polled.
    Running,
    /// Being polled, and woken since the poll began: queued again after it.
    RunningWoken,
    /// Completed, or dropped with its killed node: never runs again.
    Done,
}

/// What a wake and a run read of a light task, in 8 bytes (a 10,000-node run's fit in
/// 80 KB); its node, read only to set it aside when the node is paused, is kept apart.
#[derive(Clone, Copy)]
pub(crate) struct Task {
    pub(crate) state: State,
    /// Mirrors its node's `killed` flag (set by `NodeInfo::kill`, [`KILLED`]) and
    /// `paused` flag (`TaskHandle::pause` and `resume`, [`PAUSED`]).
    pub(crate) node_flags: u8,
    /// The poll function's byte of state.
    pub(crate) user: u8,
    /// Index of its poll function in `LightTable::polls`.
    pub(crate) poll: u8,
    pub(crate) key: u32,
}

pub(crate) const KILLED: u8 = 1;
pub(crate) const PAUSED: u8 = 2;

/// The light tasks of one runtime.
pub(crate) struct LightTable {
    /// Tells this runtime's wakers from another's (see [`Tag`]).
    generation: u32,
    pub(crate) tasks: Mutex<Vec<Task>>,
    /// Each task's node.
    pub(crate) nodes: Mutex<Vec<NodeId>>,
    pub(crate) polls: Mutex<Vec<LightFn>>,
    sender: super::mpsc::Sender<Item>,
}

static GENERATION: AtomicU32 = AtomicU32::new(1);

impl LightTable {
    pub(crate) fn new(sender: super::mpsc::Sender<Item>) -> LightTable {
        LightTable {
            generation: GENERATION.fetch_add(1, Ordering::Relaxed),
            tasks: Mutex::new(Vec::new()),
            nodes: Mutex::new(Vec::new()),
            polls: Mutex::new(Vec::new()),
            sender,
        }
    }

    /// Adds a task of `node` and queues it (as a spawned task is scheduled at once).
    pub(crate) fn spawn(&self, node: NodeId, node_flags: u8, key: u32, poll: &LightFn) -> usize {
        assert!((key as usize) < LIMIT, "a light task's key is below 2^24");
        let poll = {
            let mut polls = self.polls.lock();
            match polls.iter().position(|p| Arc::ptr_eq(p, poll)) {
                Some(i) => i,
                None => {
                    polls.push(poll.clone());
                    polls.len() - 1
                }
            }
        };
        let index = {
            let mut tasks = self.tasks.lock();
            tasks.push(Task {
                state: State::Scheduled,
                node_flags,
                user: 0,
                poll: u8::try_from(poll).expect("at most 256 light poll functions a runtime"),
                key,
            });
            self.nodes.lock().push(node);
            tasks.len() - 1
        };
        assert!(index < LIMIT, "fewer than 2^24 light tasks a runtime");
        _ = self.sender.send(Item::Light(index));
        index
    }

    /// Wakes task `index`, as `Waker::wake` wakes an `async_task` task.
    pub(crate) fn wake(&self, index: usize) {
        let mut tasks = self.tasks.lock();
        let task = &mut tasks[index];
        match task.state {
            State::Idle => {
                task.state = State::Scheduled;
                drop(tasks);
                _ = self.sender.send(Item::Light(index));
            }
            State::Running => task.state = State::RunningWoken,
            State::Scheduled | State::RunningWoken | State::Done => {}
        }
    }

    /// Marks task `index` of a killed node, and wakes it so that the executor drops it.
    pub(crate) fn kill(&self, index: usize) {
        self.set_node_flag(index, KILLED, true);
        self.wake(index);
    }

    /// A queued task was dropped without running (its paused node was killed or
    /// restarted).
    pub(crate) fn drop_task(&self, index: usize) {
        self.tasks.lock()[index].state = State::Done;
    }

    pub(crate) fn set_node_flag(&self, index: usize, flag: u8, on: bool) {
        let mut tasks = self.tasks.lock();
        if on {
            tasks[index].node_flags |= flag;
        } else {
            tasks[index].node_flags &= !flag;
        }
    }

    /// After a poll: `Ready` completes the task; a wake during the poll queues it again.
    pub(crate) fn finish_run(&self, index: usize, user: u8, poll: Poll<()>) {
        let mut tasks = self.tasks.lock();
        let task = &mut tasks[index];
        task.user = user;
        task.state = match (poll, task.state) {
            (Poll::Ready(()), _) => State::Done,
            (Poll::Pending, State::RunningWoken) => {
                task.state = State::Scheduled;
                drop(tasks);
                _ = self.sender.send(Item::Light(index));
                return;
            }
            (Poll::Pending, _) => State::Idle,
        };
    }

    /// The light task `waker` wakes, if it is one of this table's.
    pub(crate) fn tag_of(&self, waker: &Waker) -> Option<Tag> {
        if !std::ptr::eq(waker.vtable(), &VTABLE) {
            return None;
        }
        let tag = Tag::decode(waker.data() as usize);
        (tag.generation == self.generation as u8).then_some(tag)
    }

    /// Hints the poll function of the task of `tag` that it runs soon ([`Light::warm`],
    /// or [`Light::warm_late`] when `late`). Reads nothing of the task itself (its key
    /// and poll function are in the tag); asks for its entry, which its wake reads.
    pub(crate) fn warm(&self, tag: Tag, late: bool) {
        let polls = self.polls.lock();
        if late {
            polls[tag.poll as usize].warm_late(tag.key);
        } else {
            if let Some(task) = self.tasks.lock().get(tag.index) {
                crate::hint::prefetch(task);
            }
            polls[tag.poll as usize].warm(tag.key);
        }
    }

    /// The waker of task `index`.
    pub(crate) fn waker(&self, index: usize, key: u32, poll: u8) -> Waker {
        let data = Tag {
            generation: self.generation as u8,
            poll,
            key,
            index,
        }
        .encode();
        // SAFETY: the data is a number, not a pointer: the vtable's functions never
        // dereference it, and cloning or dropping it owns nothing.
        unsafe { Waker::from_raw(RawWaker::new(data as *const (), &VTABLE)) }
    }
}

/// What a light task's waker holds, in its 64 bits: the runtime's generation (8 bits,
/// to tell another runtime's wakers apart), the poll function (8), the key (24) and the
/// task's index (24).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Tag {
    pub(crate) generation: u8,
    pub(crate) poll: u8,
    pub(crate) key: u32,
    pub(crate) index: usize,
}

/// Keys and indices fit in 24 bits.
pub(crate) const LIMIT: usize = 1 << 24;

const _: () = assert!(usize::BITS == 64, "light tasks need 64-bit pointers");

impl Tag {
    fn encode(self) -> usize {
        ((self.generation as usize) << 56)
            | ((self.poll as usize) << 48)
            | ((self.key as usize) << 24)
            | self.index
    }

    fn decode(data: usize) -> Tag {
        Tag {
            generation: (data >> 56) as u8,
            poll: (data >> 48) as u8,
            key: ((data >> 24) & (LIMIT - 1)) as u32,
            index: data & (LIMIT - 1),
        }
    }
}

static VTABLE: RawWakerVTable = RawWakerVTable::new(clone, wake, wake, drop_waker);

unsafe fn clone(data: *const ()) -> RawWaker {
    RawWaker::new(data, &VTABLE)
}

unsafe fn wake(data: *const ()) {
    let tag = Tag::decode(data as usize);
    // A waker outside its runtime (the run is over) wakes nothing, as an `async_task`
    // waker then schedules onto a queue that no executor reads.
    crate::context::try_current(|h| {
        let table = &h.task.light;
        if tag.generation == table.generation as u8 {
            table.wake(tag.index);
        }
    });
}

unsafe fn drop_waker(_: *const ()) {}
