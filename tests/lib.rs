//! Workspace integration tests live in `integration/` (one test binary, modules by topic).
