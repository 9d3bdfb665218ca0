//! What the engine has learned about one exchange, as data the rules judge by: the requests
//! both ways with their cancels and tasks ([`ledger`]), the clock's reading at one moment
//! ([`waits`]), and the HTTP channels ([`streams`]). The engine fills these; the rules
//! ([`crate::rules`]) read them and never the engine, so a rule is a pure function of facts.

pub mod ledger;
pub mod streams;
pub mod waits;
