use super::*;

pub(crate) fn contract() -> Contract {
    Contract {
        model: "attention-d257".into(),
        regime: Regime::Training,
        shapes: "batch=2 seq=32 d=257".into(),
        op_stream: "00ff".into(),
        ops_per_step: 100,
        device: DeviceInfo { adapter: "llvmpipe".into(), backend: "vulkan".into(), compiler: "wgsl".into() },
        burn_version: "0.22.1".into(),
        recordable_step: None,
    }
}

fn plan() -> PlanFile {
    let mut p = PlanFile::burn_default(contract(), vec![BoundaryId(3), BoundaryId(7)]);
    p.cuts = vec![BoundaryId(7)];
    p
}

#[test]
fn ron_round_trip() {
    let p = plan();
    assert_eq!(PlanFile::parse(&p.to_ron()), Ok(p));
}

#[test]
fn empty_and_truncated_files_are_refused() {
    assert_eq!(PlanFile::parse("  \n"), Err(PlanError::Empty));
    let text = plan().to_ron();
    let cut = &text[..text.len() / 2];
    assert!(matches!(PlanFile::parse(cut), Err(PlanError::Malformed(_))));
}

#[test]
fn newer_version_is_refused_with_its_number() {
    let text = plan().to_ron().replace("format_version: 1", "format_version: 9");
    let err = PlanFile::parse(&text).unwrap_err();
    assert_eq!(err, PlanError::UnknownVersion { found: 9, oldest: 1, newest: FORMAT_VERSION });
    assert!(err.to_string().contains("format version 9"));
}

#[test]
fn unknown_boundary_is_refused() {
    let mut p = plan();
    p.cuts = vec![BoundaryId(5), BoundaryId(7), BoundaryId(500)];
    let err = PlanFile::parse(&p.to_ron()).unwrap_err();
    assert_eq!(err, PlanError::UnknownBoundaries("b5, b500".into()));
}

#[test]
fn contract_mismatch_names_the_field() {
    let mut other = contract();
    other.device.adapter = "NVIDIA H200".into();
    let err = plan().check_contract(&other).unwrap_err();
    assert!(err.to_string().contains("device adapter `llvmpipe`"), "{err}");
    let mut other = contract();
    other.op_stream = String::new(); // not known yet: not a mismatch
    assert_eq!(plan().check_contract(&other), Ok(()));
}

#[test]
fn store_keys_separate_cut_sets_and_beam_widths() {
    assert_eq!(PlanFile::store_key(&[], None), 0);
    let a = PlanFile::store_key(&[BoundaryId(1)], None);
    let b = PlanFile::store_key(&[BoundaryId(2)], None);
    let wide = PlanFile::store_key(&[BoundaryId(1)], Some(8));
    let narrow = PlanFile::store_key(&[], Some(1));
    assert!([a, b, wide, narrow].iter().all(|k| k % 2 == 1), "cut-policy keys are odd");
    assert_eq!(BTreeSet::from([a, b, wide, narrow, 0]).len(), 5);
}

#[test]
fn a_plan_without_settings_is_written_as_version_1_and_one_with_them_as_version_2() {
    let p = plan();
    assert!(p.to_ron().contains("format_version: 1"));
    assert!(!p.to_ron().contains("settings"), "no settings field in a version-1 file");
    let s = Settings { max_blocks: Some(2), max_tasks: Some(16), store: None, execution: None };
    let v2 = plan().with_settings(s);
    let text = v2.to_ron();
    assert!(text.contains("format_version: 2") && text.contains("max_blocks: Some(2)"), "{text}");
    assert_eq!(PlanFile::parse(&text), Ok(v2));
    // Settings made later without bumping the version are still written as version 2.
    let mut late = plan();
    late.settings.max_blocks = Some(3);
    assert!(late.to_ron().contains("format_version: 2"));
}

#[test]
fn a_plan_store_setting_makes_a_version_3_plan_and_version_2_files_still_load() {
    let v2 = plan().with_settings(Settings::beam_width(Some(8)));
    assert!(v2.to_ron().contains("format_version: 2") && !v2.to_ron().contains("store"), "no store: still version 2");
    let positional =
        plan().with_settings(Settings { store: Some(PlanStore::ByPosition), ..Settings::beam_width(Some(8)) });
    let text = positional.to_ron();
    assert!(text.contains("format_version: 3") && text.contains("store: Some(ByPosition)"), "{text}");
    assert_eq!(PlanFile::parse(&text), Ok(positional.clone()));
    assert_eq!(
        PlanFile::parse(&text.replace("format_version: 3", "format_version: 2")),
        Err(PlanError::StoreBeforeVersion3)
    );
    let shipped_v2 = text.replace("format_version: 3", "format_version: 2").replace("store: Some(ByPosition),", "");
    assert_eq!(
        PlanFile::parse(&shipped_v2).map(|p| p.settings),
        Ok(Settings::beam_width(Some(8))),
        "a version-2 width reads with no store setting"
    );
}

#[test]
fn a_shared_store_with_cuts_is_refused() {
    let mut p = plan();
    assert!(!p.cuts.is_empty());
    p = p.with_settings(Settings { store: Some(PlanStore::Shared), ..Settings::default() });
    assert_eq!(PlanFile::parse(&p.to_ron()), Err(PlanError::SharedStoreWithCuts));
    p.settings.store = Some(PlanStore::ByPosition);
    assert!(PlanFile::parse(&p.to_ron()).is_ok(), "by position is what cuts do anyway");
}

#[test]
fn a_width_cached_by_position_has_a_store_of_its_own() {
    let width = Settings::beam_width(Some(8));
    let positional = Settings { store: Some(PlanStore::ByPosition), ..width };
    assert_eq!(PlanFile::store_key_of(&[], &width), PlanFile::store_key(&[], Some(8)));
    assert_ne!(PlanFile::store_key_of(&[], &positional), PlanFile::store_key_of(&[], &width));
    assert_ne!(
        PlanFile::store_key_of(&[], &Settings { store: Some(PlanStore::ByPosition), ..Settings::default() }),
        0,
        "not Burn's own store"
    );
    let cut = [BoundaryId(1)];
    assert_eq!(
        PlanFile::store_key_of(&cut, &positional),
        PlanFile::store_key_of(&cut, &width),
        "cuts cache by position anyway: one store"
    );
}

#[test]
fn version_1_files_still_load_with_burns_settings() {
    let v1 = include_str!("../../fuzz/corpus/plan/h200-attention-d257-training.ron");
    let p = PlanFile::parse(v1).expect("the shipped version-1 plan reads");
    assert_eq!((p.format_version, p.settings), (1, Settings::default()));
}

#[test]
fn a_version_1_file_holding_settings_is_refused() {
    let text = plan().to_ron().replace("cuts: [", "settings: (max_blocks: Some(2)),\n    cuts: [");
    assert_eq!(PlanFile::parse(&text), Err(PlanError::SettingsInVersion1));
}

#[test]
fn settings_out_of_range_are_refused_with_their_name() {
    for (s, name) in [
        (Settings { max_blocks: Some(0), ..Settings::default() }, "max_blocks = 0"),
        (Settings { max_tasks: Some(1 << 20), ..Settings::default() }, "max_tasks = 1048576"),
    ] {
        let err = PlanFile::parse(&plan().with_settings(s).to_ron()).unwrap_err();
        assert!(err.to_string().contains(name), "{err}");
    }
}

#[test]
fn settings_text_round_trips() {
    let mut s = Settings::default();
    assert_eq!(s.to_text(), "burn");
    assert_eq!(s.read_word("blocks=2"), Ok(true));
    assert_eq!(s.read_word("tasks=16"), Ok(true));
    assert_eq!(s.read_word("b5"), Ok(false));
    assert!(s.read_word("blocks=0").is_err() && s.read_word("tasks=x").is_err());
    assert_eq!(s.to_text(), "blocks=2 tasks=16");
    assert_eq!(s.read_word("store=position"), Ok(true));
    assert_eq!(s.to_text(), "blocks=2 tasks=16 store=position");
    assert!(s.read_word("store=somewhere").unwrap_err().contains("store=shared or store=position"));
    let mut back = Settings::default();
    for word in s.to_text().split(' ') {
        assert_eq!(back.read_word(word), Ok(true));
    }
    assert_eq!(back, s);
}

/// Burn's own fusion for a forward step (no cuts), as captured plans are.
fn forward_plan() -> PlanFile {
    let mut p = plan();
    p.contract.regime = Regime::Forward;
    p.cuts.clear();
    p
}

#[test]
fn captured_execution_makes_a_version_4_plan_and_older_files_read_as_eager() {
    let captured = forward_plan().with_settings(Settings::beam_width(Some(3)).captured());
    let text = captured.to_ron();
    assert!(text.contains("format_version: 4") && text.contains("execution: Some(Captured)"), "{text}");
    assert_eq!(PlanFile::parse(&text), Ok(captured.clone()));
    assert!(PlanFile::parse(&text).unwrap().settings.is_captured());
    // The same file claiming an older version cannot hold the setting.
    assert_eq!(
        PlanFile::parse(&text.replace("format_version: 4", "format_version: 3")),
        Err(PlanError::ExecutionBeforeVersion4)
    );
    // A version-3 file (no execution field) reads as eager.
    let v3 = text.replace("format_version: 4", "format_version: 2").replace("execution: Some(Captured),", "");
    let read = PlanFile::parse(&v3).expect("a version-2 width still reads");
    assert!(!read.settings.is_captured() && read.settings.execution.is_none(), "{:?}", read.settings);
    // Without execution the plan keeps its old version, so older Blaze builds still read it.
    assert!(forward_plan().with_settings(Settings::beam_width(Some(3))).to_ron().contains("format_version: 2"));
}

#[test]
fn captured_plans_of_either_regime_validate_with_or_without_cuts() {
    let mut p = plan().with_settings(Settings::default().captured());
    assert_eq!(p.contract.regime, Regime::Training);
    assert_eq!(p.validate(), Ok(()), "the fixture cuts b7: its recording is checked to run the plan's partition");
    p.cuts.clear();
    assert_eq!(p.validate(), Ok(()), "a training step is recorded with its state held in place");
    p.contract.regime = Regime::Forward;
    assert_eq!(p.validate(), Ok(()));
}

fn recordable() -> StepStream {
    StepStream { op_stream: "0abc".into(), ops_per_step: 120 }
}

#[test]
fn a_recordable_step_makes_a_version_5_plan_that_watches_it_and_older_files_have_none() {
    let mut captured = plan();
    captured.contract.recordable_step = Some(recordable());
    let captured = captured.with_settings(Settings::beam_width(Some(3)).captured());
    let text = captured.to_ron();
    assert!(text.contains("format_version: 5") && text.contains("op_stream: \"0abc\""), "{text}");
    let read = PlanFile::parse(&text).unwrap();
    assert_eq!(read, captured);
    assert_eq!(read.contract.watched_step(&read.settings), recordable());
    // The same plan run eagerly, or a version-4 file (none recorded), watches the traced step.
    let traced = StepStream { op_stream: "00ff".into(), ops_per_step: 100 };
    assert_eq!(read.contract.watched_step(&read.settings.eager()), traced);
    let v4 = plan().with_settings(Settings::beam_width(Some(3)).captured());
    assert!(v4.to_ron().contains("format_version: 4"));
    assert_eq!(v4.contract.watched_step(&v4.settings), traced);
    assert_eq!(
        PlanFile::parse(&text.replace("format_version: 5", "format_version: 4")),
        Err(PlanError::RecordableStepBeforeVersion5)
    );
}

#[test]
fn a_recordable_step_outside_captured_training_or_without_operations_is_refused() {
    let with_step = |settings: Settings, regime: Regime, ops: u64| {
        let mut p = plan().with_settings(settings);
        p.contract.regime = regime;
        p.contract.recordable_step = Some(StepStream { ops_per_step: ops, ..recordable() });
        PlanFile::parse(&p.to_ron())
    };
    let captured = Settings::default().captured();
    assert!(with_step(captured, Regime::Training, 120).is_ok());
    let eager = with_step(Settings::default(), Regime::Training, 120).unwrap_err();
    assert_eq!(
        eager.to_string(),
        "a recordable step is part of a captured training plan only; this plan is eager training"
    );
    let forward = with_step(captured, Regime::Forward, 120).unwrap_err();
    assert_eq!(forward, PlanError::RecordableStepNotCaptured("captured forward".into()));
    assert_eq!(with_step(captured, Regime::Training, 0), Err(PlanError::EmptyRecordableStep));
}

#[test]
fn execution_words_round_trip_and_eager_strips_them() {
    let mut s = Settings::default();
    assert_eq!(s.read_word("exec=captured"), Ok(true));
    assert!(s.is_captured() && s.to_text() == "exec=captured", "{}", s.to_text());
    assert_eq!(s.eager(), Settings::default());
    assert!(s.read_word("exec=replayed").unwrap_err().contains("exec=eager or exec=captured"));
    let width = Settings::beam_width(Some(2)).captured();
    assert_eq!(width.to_text(), "blocks=2 exec=captured");
    assert_eq!(
        PlanFile::store_key_of(&[], &width),
        PlanFile::store_key_of(&[], &width.eager()),
        "execution changes no plan store"
    );
}

#[test]
fn older_plan_files_verification_text_reads_as_the_typed_record() {
    let cases = [
        (
            "Verified { identical: true, max_rel_diff: 0.0 }",
            VerifyOutcome::Verified { identical: true, max_rel_diff: 0.0 },
        ),
        (
            "Verified { identical: false, max_rel_diff: 2.0434913e-7 }",
            VerifyOutcome::Verified { identical: false, max_rel_diff: 2.0434913e-7 },
        ),
        ("NothingToCheck", VerifyOutcome::NothingToCheck),
        ("NotSettled(\"nan\")", VerifyOutcome::NotSettled("nan".into())),
    ];
    for (text, typed) in cases {
        assert_eq!(VerifyOutcome::from_debug_text(text), Some(typed.clone()), "{text}");
        // Debug text is what older Blaze wrote: the reading is its inverse.
        assert_eq!(VerifyOutcome::from_debug_text(&format!("{typed:?}")), Some(typed), "{text}");
    }
    assert_eq!(VerifyOutcome::from_debug_text("not an outcome"), None);
    // A refusal's Debug text held its sentence alone: it reads with the kind the sentence names.
    assert_eq!(
        VerifyOutcome::from_debug_text("Refused(\"different losses\")"),
        Some(VerifyOutcome::refused(RefusalKind::Unclassified, "different losses"))
    );
}

#[test]
fn a_refusal_is_written_with_its_kind_and_an_older_sentence_reads_with_the_kind_it_began_with() {
    let typed = VerifyOutcome::refused(RefusalKind::FlippedPrediction, "different: argmax differs in 2 prediction(s)");
    let text = ron::to_string(&typed).unwrap();
    assert!(text.contains("kind:FlippedPrediction") || text.contains("kind: FlippedPrediction"), "{text}");
    assert_eq!(ron::from_str::<VerifyOutcome>(&text).unwrap(), typed);
    // `blazec verify` prints the outcome's Debug form: the kind and the sentence, both named.
    let debug = format!("{typed:?}");
    assert!(debug.contains("kind: FlippedPrediction") && debug.contains("detail: \"different: argmax"), "{debug}");
    let older = [
        ("Refused(\"different: relative difference 3.1e-3 exceeds 1e-5\")", RefusalKind::BeyondTolerance),
        ("Refused(\"different: argmax differs in 1 prediction(s)\")", RefusalKind::FlippedPrediction),
        ("Refused(\"different: not finite where the reference is\")", RefusalKind::NotFinite),
        ("Refused(\"broken: outputs missing\")", RefusalKind::Broken),
        ("Refused(\"not captured: eager: recording refused\")", RefusalKind::NotCaptured),
        (
            "Refused(\"cannot check: two fresh instances under Burn's plan already differ\")",
            RefusalKind::Unreproducible,
        ),
        ("Refused(\"something else\")", RefusalKind::Unclassified),
    ];
    for (text, kind) in older {
        let read = ron::from_str::<VerifyOutcome>(text).unwrap();
        assert_eq!(read.refusal_kind(), Some(kind), "{text}");
        // The sentence is kept whole: what the report shows does not change.
        assert!(text.contains(&read.to_string()["refused: ".len()..]), "{text}: {read}");
    }
    // Kinds decide what follows: drift is measured for finite differences only.
    assert!(RefusalKind::BeyondTolerance.drift_can_explain() && RefusalKind::FlippedPrediction.drift_can_explain());
    assert!(!RefusalKind::NotFinite.drift_can_explain() && RefusalKind::NotFinite.is_different_numbers());
    assert!(!RefusalKind::Broken.is_different_numbers() && !RefusalKind::NotCaptured.is_different_numbers());
}

#[test]
fn a_new_plan_file_holds_the_typed_verification_and_no_debug_text() {
    let verified = VerifyOutcome::Verified { identical: false, max_rel_diff: 3.5e-7 };
    let measurements = Measurements {
        protocol: "p".into(),
        results_file: "r".into(),
        default_ms: 1.0,
        fusion_off_ms: None,
        plan_ms: 0.9,
        spread_ms: 0.01,
        verify: String::new(),
        selection: "s".into(),
        verification: Some(verified.clone()),
    };
    let text = ron::to_string(&measurements).unwrap();
    assert!(!text.contains("verify:") && text.contains("verification:Some(Verified("), "{text}");
    let back: Measurements = ron::from_str(&text).unwrap();
    assert_eq!(back.verification(), Some(verified));
    // An older file: the text field only.
    let old = Measurements {
        verify: "Verified { identical: true, max_rel_diff: 0.0 }".into(),
        verification: None,
        ..measurements
    };
    let old_text = ron::to_string(&old).unwrap();
    assert!(old_text.contains("verify:\"Verified {") && !old_text.contains("verification"), "{old_text}");
    let old: Measurements = ron::from_str(&old_text).unwrap();
    assert_eq!(old.verification(), Some(VerifyOutcome::Verified { identical: true, max_rel_diff: 0.0 }));
}

#[test]
fn a_plan_kept_within_drift_says_so_in_its_record_and_reads_back() {
    let within = VerifyOutcome::WithinDrift { max_rel_diff: 6.5e-5, unfused: 9.0e-5, steps: 1007, alternate: None };
    let text = ron::to_string(&Some(within.clone())).unwrap();
    assert_eq!(text, "Some(WithinDrift(max_rel_diff:0.000065,unfused:0.00009,steps:1007))");
    assert_eq!(ron::from_str::<Option<VerifyOutcome>>(&text).unwrap(), Some(within.clone()));
    assert!(within.keeps() && within.is_verified());
    assert_eq!(
        within.to_string(),
        "verified: within Burn's own rounding drift over 1007 steps (largest relative difference 6.5e-5; Burn \
         unfused against fused 9e-5)"
    );
}

#[test]
fn a_plan_kept_within_another_of_burns_executions_names_it_and_reads_back() {
    let other = ReferenceDrift { execution: "Burn's default plan".into(), max_rel_diff: 8.0e-5 };
    let within =
        VerifyOutcome::WithinDrift { max_rel_diff: 7.0e-5, unfused: 6.0e-5, steps: 1007, alternate: Some(other) };
    let text = ron::to_string(&within).unwrap();
    assert!(text.contains("alternate:Some((execution:\"Burn") && text.ends_with(",max_rel_diff:0.00008)))"), "{text}");
    assert_eq!(ron::from_str::<VerifyOutcome>(&text).unwrap(), within);
    assert!(within.to_string().ends_with("fused 6e-5; Burn's default plan against this fusion 8e-5)"), "{within}");
}
