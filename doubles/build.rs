// `embed_migrations!` reads the migrations folder when the crate compiles, and
// cargo sees only the files it included: a new migration needs this to be
// embedded at all.
fn main() {
    println!("cargo:rerun-if-changed=migrations");
}
