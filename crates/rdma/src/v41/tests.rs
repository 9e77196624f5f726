//! Host tests of the NFSv4.1 session scenarios.
