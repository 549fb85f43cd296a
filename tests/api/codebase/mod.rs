//! The codebase holds together: its layers and imports, its documents'
//! links, and SQL with bound values only.

mod architecture;
mod docs;
mod file_imports;
mod queries;
