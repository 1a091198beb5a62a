use super::*;

#[test]
fn base64_matches_rfc_4648() {
    assert_eq!(base64(b""), "");
    assert_eq!(base64(b"f"), "Zg==");
    assert_eq!(base64(b"fo"), "Zm8=");
    assert_eq!(base64(b"foo"), "Zm9v");
    assert_eq!(base64(b"foobar"), "Zm9vYmFy");
    assert_eq!(base64(b"user:pa ss"), "dXNlcjpwYSBzcw==");
}

#[test]
fn base_urls_are_checked() {
    assert_eq!(parse_base("http://p:9090/").unwrap(), "http://p:9090");
    assert_eq!(
        parse_base("https://p.example/prometheus/").unwrap(),
        "https://p.example/prometheus"
    );
    let e = parse_base("http://me:secret@p:9090")
        .unwrap_err()
        .to_string();
    assert!(e.contains("VRAMWATCH_FLEET_PASSWORD"), "{e}");
    assert!(!e.contains("secret"), "{e}");
    assert!(parse_base("p:9090").is_err());
    assert!(parse_base("ftp://p").is_err());
    assert!(parse_base("http://p:9090/?x=1").is_err());
}

#[test]
fn secrets_are_not_printed() {
    let a = Auth::Bearer("s3cret".into());
    assert!(!format!("{a:?}").contains("s3cret"));
}

/// A host label (or any label) with escape sequences would clear the
/// screen or recolour it when drawn: cleaned where it is decoded.
#[test]
fn labels_from_outside_are_cleaned() {
    let v = serde_json::json!({"resultType": "vector", "result": [
        {"metric": {"host": "\u{1b}[2Jh", "a\u{7}": "x"}, "value": [1.5, "1"]}]});
    let s = decode_vector("u", v).unwrap();
    assert_eq!(s[0].labels["host"], "h");
    assert_eq!(s[0].labels["a"], "x");
    let m = serde_json::json!({"resultType": "matrix", "result": [
        {"metric": {"host": "\u{1b}]0;title\u{7}h"}, "values": [[1.0, "1"]]}]});
    let m = decode_matrix("u", m).unwrap();
    assert!(
        m[0].labels["host"].chars().all(|c| !c.is_control()),
        "{:?}",
        m[0].labels
    );
    let long = "x".repeat(10_000);
    let v = serde_json::json!({"resultType": "vector", "result": [
        {"metric": {"host": long}, "value": [1.5, "1"]}]});
    assert!(decode_vector("u", v).unwrap()[0].labels["host"].len() <= 4096);
}

#[test]
fn results_decode() {
    let v = serde_json::json!({"resultType": "vector", "result": [
        {"metric": {"instance": "a"}, "value": [1.5, "2.25"]},
        {"metric": {}, "value": [1.5, "NaN"]},
        {"metric": {}, "value": [1.5, "+Inf"]}]});
    let s = decode_vector("u", v).unwrap();
    assert_eq!(s[0].labels["instance"], "a");
    assert_eq!(s[0].value, 2.25);
    assert!(s[1].value.is_nan());
    assert_eq!(s[2].value, f64::INFINITY);
    let m = serde_json::json!({"resultType": "matrix", "result": [
        {"metric": {"gpu": "0"}, "values": [[1.0, "1"], [2.0, "3"]]}]});
    let m = decode_matrix("u", m).unwrap();
    assert_eq!(m[0].points, vec![(1.0, 1.0), (2.0, 3.0)]);
    let sc = serde_json::json!({"resultType": "scalar", "result": [1.0, "7"]});
    assert_eq!(decode_vector("u", sc).unwrap()[0].value, 7.0);
    let bad = serde_json::json!({"resultType": "matrix", "result": []});
    assert!(decode_vector("u", bad).is_err());
}

#[test]
fn forms_are_encoded() {
    assert_eq!(urlencode("up{job=\"a b\"}"), "up%7Bjob%3D%22a%20b%22%7D");
}
