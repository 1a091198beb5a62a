use super::*;
use crate::source::sim::{SimSource, SimWorld};

fn sim(name: &str) -> Box<dyn Source> {
    let world = SimWorld::new(name, 1, 1_764_000_000_000).unwrap();
    Box::new(SimSource::new(world, "me".into()))
}

fn gpus(name: &str) -> Vec<DeviceInfo> {
    sim(name).system().gpus.clone()
}

fn chosen(sel: &Selection, env: Option<&str>) -> Result<Chosen, String> {
    resolve(sel, env, &gpus("demo")).map_err(|e| e.to_string())
}

fn list(s: &str) -> Selection {
    Selection::List(GpuList::parse(s).unwrap())
}

#[test]
fn gpu_lists_parse_indexes_uuids_and_bus_ids() {
    assert_eq!(
        GpuList::parse("0, 2,GPU-abc,0000:18:00.0").unwrap().0,
        [
            GpuId::Index(0),
            GpuId::Index(2),
            GpuId::Uuid("GPU-abc".into()),
            GpuId::BusId("0000:18:00.0".into())
        ]
    );
    assert!(GpuList::parse("0,").unwrap_err().contains("empty"));
    assert!(
        GpuList::parse("x")
            .unwrap_err()
            .contains("`x` is not a GPU index")
    );
    assert!(GpuList::parse("-1").unwrap_err().contains("`-1`"));
    assert!(GpuList::parse("MIG-1").unwrap_err().contains("MIG"));
    assert!(GpuList::parse("1:2").unwrap_err().contains("PCI bus id"));
    assert_eq!(
        GpuList::parse("0-2, 5 - 6,GPU-1-2").unwrap().0,
        [
            GpuId::Index(0),
            GpuId::Index(1),
            GpuId::Index(2),
            GpuId::Index(5),
            GpuId::Index(6),
            GpuId::Uuid("GPU-1-2".into())
        ],
        "index ranges; a UUID's dashes are not a range"
    );
    assert_eq!(GpuList::parse("3-3").unwrap().0, [GpuId::Index(3)]);
    assert_eq!(
        GpuList::parse("3-1").unwrap_err(),
        "`3-1` counts down; a range of GPU indexes counts up, like 1-3"
    );
    assert_eq!(
        GpuList::parse("0-70000").unwrap_err(),
        "`0-70000` names 70001 GPUs; a range may name at most 64"
    );
    assert!(GpuList::parse("0-63").is_ok());
    assert!(GpuList::parse("0-64").unwrap_err().contains("at most 64"));
    assert!(
        GpuList::parse("0-99999999999")
            .unwrap_err()
            .contains("at most 4294967295")
    );
    assert!(GpuList::parse("1-").unwrap_err().contains("`1-`"));
    assert!(GpuList::parse("a-b").unwrap_err().contains("`a-b`"));
    assert_eq!(bus_key("00000000:18:00.0"), bus_key("0000:18:00.0"));
    assert_eq!(bus_key("18:00.0"), bus_key("0000:18:00.0"));
}

#[test]
fn without_a_choice_every_gpu_is_shown() {
    let every = Chosen {
        positions: None,
        note: None,
        shown: None,
    };
    assert_eq!(chosen(&Selection::Auto, None), Ok(every.clone()));
    assert_eq!(chosen(&Selection::All, Some("1")), Ok(every.clone()));
    assert_eq!(chosen(&list("0,1,2,3"), None), Ok(every));
}

#[test]
fn gpu_picks_in_the_order_given_and_is_strict() {
    let g = gpus("demo");
    let by_uuid = format!("{},{}", &g[3].uuid[..12], g[1].uuid.to_lowercase());
    assert_eq!(
        chosen(&list(&by_uuid), None).unwrap().positions,
        Some(vec![3, 1])
    );
    assert_eq!(
        chosen(&list("28:00.0,2,2"), Some("0")).unwrap().positions,
        Some(vec![1, 2]),
        "a bus id; duplicates once; --gpu wins over CUDA_VISIBLE_DEVICES"
    );
    assert_eq!(
        chosen(&list("3,1"), None).unwrap().shown.unwrap(),
        "showing GPUs 3, 1 as 0, 1 (--gpu 3,1)"
    );
    assert_eq!(
        chosen(&Selection::Auto, Some("2")).unwrap().shown.unwrap(),
        "showing GPU 2 as 0 (CUDA_VISIBLE_DEVICES=2)"
    );
    assert_eq!(
        chosen(&list("2-3,0"), None).unwrap().positions,
        Some(vec![2, 3, 0]),
        "a range and an index, in the order given"
    );
    let e = chosen(&list("0-7"), None).unwrap_err();
    assert_eq!(e, "--gpu 0-7: `4` is none of this machine's GPUs 0-3");
    let e = chosen(&list("1,7"), None).unwrap_err();
    assert_eq!(e, "--gpu 1,7: `7` is none of this machine's GPUs 0-3");
    let e = chosen(&list("GPU-"), None).unwrap_err();
    assert!(e.contains("matches GPUs 0 and 1 and 2 and 3"), "{e}");
}

#[test]
fn cuda_visible_devices_is_read_as_cuda_does() {
    let g = gpus("demo");
    assert_eq!(
        chosen(&Selection::Auto, Some("2, 0")).unwrap().positions,
        Some(vec![2, 0])
    );
    let uuid = format!("{},3", &g[1].uuid[..10]);
    assert_eq!(
        chosen(&Selection::Auto, Some(&uuid)).unwrap().positions,
        Some(vec![1, 3])
    );
    // Up to the first entry that names no GPU.
    let c = chosen(&Selection::Auto, Some("1,9,2")).unwrap();
    assert_eq!(c.positions, Some(vec![1]));
    let note = c.note.unwrap();
    assert!(
        note.starts_with("CUDA_VISIBLE_DEVICES=1,9,2: `9` is none of this machine's GPUs 0-3")
            && note.contains("--all-gpus"),
        "{note}"
    );
    for none in ["", "-1", "NoDevFiles", "7"] {
        let e = chosen(&Selection::Auto, Some(none)).unwrap_err();
        assert!(
            e.starts_with(&format!("CUDA_VISIBLE_DEVICES={none} selects no GPU"))
                && e.contains("--all-gpus"),
            "{e}"
        );
    }
}

#[test]
fn a_list_is_written_back_as_it_would_be_typed() {
    let shown = |s: &str| GpuList::parse(s).unwrap().to_string();
    assert_eq!(shown("0-9"), "0-9");
    assert_eq!(shown("1,2"), "1,2");
    assert_eq!(shown("0-2,4,5,7-9"), "0-2,4,5,7-9");
    assert_eq!(shown("3,2,1"), "3,2,1");
    assert_eq!(shown("0,1,GPU-abc,2,3,4"), "0,1,GPU-abc,2-4");
    // Never a range the parser would refuse: at most 64 GPUs a range.
    assert_eq!(shown("0-63,64-70"), "0-63,64-70");
    let many = GpuList::parse("0-63,64-70").unwrap();
    assert_eq!(GpuList::parse(&many.to_string()).unwrap(), many);
    // An error names the list as typed, not 64 indexes.
    let e = chosen(&list("0-9"), None).unwrap_err();
    assert!(e.starts_with("--gpu 0-9: `4` is none"), "{e}");
}
