//! Tests of the signature schemes (to be written).
