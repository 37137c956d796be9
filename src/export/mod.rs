//! Writing a run in other tools' formats, outside the archive: [`eee`] (Every Eval Ever).
//! An export reads the archive through its readers and writes only under the destination
//! the user names, each file new and atomic; it never writes under ROOT.

pub mod eee;
