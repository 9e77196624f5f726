//! Tests of the NFSv4.1 COMPOUND codec: round trips, reduced streams, hostile input.
