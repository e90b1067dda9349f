//! Standard base64 (RFC 4648, with padding), for the few places the served API writes bytes
//! as text: a ConfigMap's `binaryData`, the kubeconfig's `certificate-authority-data`.

const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

pub fn encode(bytes: &[u8]) -> String {
    let mut out = String::with_capacity(bytes.len().div_ceil(3) * 4);
    for chunk in bytes.chunks(3) {
        let b = [chunk[0], *chunk.get(1).unwrap_or(&0), *chunk.get(2).unwrap_or(&0)];
        let n = (b[0] as u32) << 16 | (b[1] as u32) << 8 | b[2] as u32;
        for i in 0..4 {
            if i <= chunk.len() {
                out.push(ALPHABET[(n >> (18 - 6 * i) & 63) as usize] as char);
            } else {
                out.push('=');
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    #[test]
    fn encodes_with_padding() {
        assert_eq!(super::encode(b"hi!?"), "aGkhPw==");
        assert_eq!(super::encode(b"abc"), "YWJj");
        assert_eq!(super::encode(b""), "");
    }
}
