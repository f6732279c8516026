fn main() {
    println!("gpcap");
}
