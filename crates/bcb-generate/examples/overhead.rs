// placeholder so the workspace parses until the bench lands; replace freely.
fn main() {}
