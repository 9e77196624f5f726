//! Retransmitting client (in progress).
