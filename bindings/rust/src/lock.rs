// SPDX-License-Identifier: Apache-2.0
//! The set's lock: held by the set's thread around its calls into the
//! library, and taken by a snapshot write on another thread around each of
//! its calls on the guard (the write's `.lock`).  Re-entrant for the thread
//! that holds it: a callback inside `process` calls the set again, and the
//! write's first hold nests inside the binding's own (see snapshot.rs).

use std::sync::{Condvar, Mutex};
use std::thread::{self, ThreadId};

#[derive(Default)]
struct State {
    holder: Option<ThreadId>,
    depth: u32,
    /// Give the lock up when depth comes back to 1 (snapshot.rs).
    release_at_one: bool,
    waiters: u32,
}

pub(crate) struct ReLock {
    st: Mutex<State>,
    cv: Condvar,
}

pub(crate) struct Held<'a>(&'a ReLock);

impl Drop for Held<'_> {
    fn drop(&mut self) {
        self.0.unlock();
    }
}

impl ReLock {
    pub(crate) fn new() -> ReLock {
        ReLock {
            st: Mutex::new(State::default()),
            cv: Condvar::new(),
        }
    }

    pub(crate) fn hold(&self) -> Held<'_> {
        self.lock();
        Held(self)
    }

    pub(crate) fn lock(&self) {
        let me = thread::current().id();
        let mut s = self.st.lock().unwrap();
        if s.holder == Some(me) {
            s.depth += 1;
            return;
        }
        while s.holder.is_some() {
            s.waiters += 1;
            s = self.cv.wait(s).unwrap();
            s.waiters -= 1;
        }
        s.holder = Some(me);
        s.depth = 1;
    }

    pub(crate) fn unlock(&self) {
        let mut s = self.st.lock().unwrap();
        s.depth -= 1;
        if s.depth == 1 && s.release_at_one {
            s.release_at_one = false;
            s.depth = 0;
        }
        if s.depth == 0 {
            s.holder = None;
            if s.waiters > 0 {
                self.cv.notify_one();
            }
        }
    }

    /// For the holder: give the lock up at the end of the next nested hold.
    pub(crate) fn release_after_next(&self) {
        self.st.lock().unwrap().release_at_one = true;
    }

    /// For the holder: if the nested hold never came, give the lock up now.
    pub(crate) fn release_if_still_held(&self) {
        let me = thread::current().id();
        let held = {
            let mut s = self.st.lock().unwrap();
            let held = s.holder == Some(me) && s.release_at_one;
            if held {
                s.release_at_one = false;
            }
            held
        };
        if held {
            self.unlock();
        }
    }
}
