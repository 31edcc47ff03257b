//! Journal tests on real files in a temporary directory.
