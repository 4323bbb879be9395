//! The request scanner (being written).
