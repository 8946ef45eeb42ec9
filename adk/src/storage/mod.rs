//! The storage contract. PLACEHOLDER — issue 3.
