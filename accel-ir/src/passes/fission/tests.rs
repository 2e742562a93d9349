//! Tests of the split.
use super::*;

fn print_expr(e: &Expr) -> String {
    e.to_string()
}

fn f32s() -> Type {
    Type::Seq(Box::new(Type::Scalar(ScalarType::F32)))
}

fn map_of(xs: &str, elem: Expr) -> Expr {
    Expr::par(
        ParOp::Create,
        vec![
            Expr::len_of(Expr::var(xs)),
            Expr::Lambda {
                params: vec![(Pat::bind("i"), usize_ty())],
                body: Box::new(elem),
            },
        ],
    )
}

fn add() -> Expr {
    Expr::Lambda {
        params: vec![
            (Pat::bind("a"), Type::Scalar(ScalarType::F32)),
            (Pat::bind("b"), Type::Scalar(ScalarType::F32)),
        ],
        body: Box::new(binary(BinOp::Add, Expr::var("a"), Expr::var("b"))),
    }
}

#[test]
fn a_map_reads_its_part_of_an_input_read_at_its_index_and_all_of_one_read_beside_it() {
    // create(xs.len(), |i| xs[i] * ys[i + 1]): xs is sliced, ys is read beside i.
    let body = map_of(
        "xs",
        binary(
            BinOp::Mul,
            index(Expr::var("xs"), Expr::var("i")),
            index(
                Expr::var("ys"),
                binary(BinOp::Add, Expr::var("i"), Expr::int(1)),
            ),
        ),
    );
    let caps = vec![("xs".to_string(), f32s()), ("ys".to_string(), f32s())];
    let s = split(&body, &caps, &f32s()).unwrap();
    assert_eq!(s.sliced, vec!["xs".to_string()]);
    assert!(matches!(s.combine, Combine::Concat));
    assert_eq!(print_expr(&s.length), "(.len xs)");
    let part = print_expr(&s.part);
    assert!(part.contains("(- accel#hi accel#lo)"), "{part}");
    assert!(
        part.contains("(let i: usize (+ accel#lo accel#j))"),
        "{part}"
    );
    assert!(part.contains("(index xs accel#j)"), "{part}");
    assert!(part.contains("(index ys (+ i 1))"), "{part}");
}

#[test]
fn a_reduce_over_a_capture_combines_its_partial_results_with_its_operator() {
    let body = Expr::par(
        ParOp::Reduce,
        vec![
            add(),
            Expr::Lit(crate::Lit::Float(0.0, None)),
            Expr::var("xs"),
        ],
    );
    let caps = vec![("xs".to_string(), f32s())];
    let s = split(&body, &caps, &Type::Scalar(ScalarType::F32)).unwrap();
    assert_eq!(s.sliced, vec!["xs".to_string()]);
    assert_eq!(s.part_result, Type::Scalar(ScalarType::F32));
    let Combine::Reduce { partials } = &s.combine else {
        panic!("{:?}", s.combine)
    };
    assert_eq!(s.elem, Type::Scalar(ScalarType::F32));
    assert!(print_expr(partials).contains("accel#partials"));
    assert!(print_expr(&s.part).contains("(index xs accel#j)"));
}

#[test]
fn a_scan_adds_the_carry_into_each_part_after_the_first() {
    let body = Expr::par(
        ParOp::Scan,
        vec![
            add(),
            Expr::Lit(crate::Lit::Float(0.0, None)),
            Expr::var("xs"),
        ],
    );
    let caps = vec![("xs".to_string(), f32s())];
    let s = split(&body, &caps, &f32s()).unwrap();
    let Combine::Scan {
        fixup, carry_in, ..
    } = &s.combine
    else {
        panic!("{:?}", s.combine)
    };
    // A distributed site's rank adds its one carry to every element of its part.
    let carry_in = print_expr(carry_in);
    assert!(
        carry_in.contains("(index accel#carries 0usize)"),
        "{carry_in}"
    );
    assert!(!carry_in.contains("accel#chunk"), "{carry_in}");
    let fixup = print_expr(fixup);
    assert!(
        fixup.contains("(if (< accel#k accel#chunk) (index accel#scanned accel#k)"),
        "{fixup}"
    );
    assert!(
        fixup.contains("(index accel#carries (- (/ accel#k accel#chunk) 1usize))"),
        "{fixup}"
    );
}

#[test]
fn a_histogram_starts_each_part_from_neutral_bins_and_merges_them_after() {
    let usizes = Type::Seq(Box::new(Type::Scalar(ScalarType::Usize)));
    let body = Expr::par(
        ParOp::ReduceByIndex,
        vec![
            Expr::var("dest"),
            add(),
            Expr::Lit(crate::Lit::Float(0.0, None)),
            Expr::var("is"),
            Expr::var("vs"),
        ],
    );
    let caps = vec![
        ("dest".to_string(), f32s()),
        ("is".to_string(), usizes),
        ("vs".to_string(), f32s()),
    ];
    let s = split(&body, &caps, &f32s()).unwrap();
    // Both inputs are read at their own index; the bins are not.
    assert_eq!(s.sliced, vec!["is".to_string(), "vs".to_string()]);
    // The part reads only the destination's length: ranks may each hold a part of it.
    assert_eq!(s.destination.as_deref(), Some("dest"));
    // Read in an element too (`vs[i] + dest[0]`), the destination is the part's whole.
    let plus_first = Expr::Binary(
        crate::BinOp::Add,
        Box::new(index(Expr::var("vs"), Expr::var("i"))),
        Box::new(index(Expr::var("dest"), Expr::int(0))),
    );
    let reads_dest = Expr::par(
        ParOp::ReduceByIndex,
        vec![
            Expr::var("dest"),
            add(),
            Expr::Lit(crate::Lit::Float(0.0, None)),
            Expr::var("is"),
            map_of("vs", plus_first),
        ],
    );
    assert_eq!(
        split(&reads_dest, &caps, &f32s()).unwrap().destination,
        None
    );
    assert_eq!(print_expr(&s.length), "(tuple (.len is) (.len vs))");
    let part = print_expr(&s.part);
    assert!(
        part.starts_with("(reduce_by_index (seq-repeat 0.0 (.len dest))"),
        "{part}"
    );
    let Combine::Histogram { bins, merge } = &s.combine else {
        panic!("{:?}", s.combine)
    };
    assert_eq!(print_expr(bins), "(.len dest)");
    let merge = print_expr(merge);
    assert!(
        merge.contains("(index accel#partials (+ (* accel#c (.len accel#dest)) accel#b))"),
        "{merge}"
    );
}

#[test]
fn what_is_not_split_says_why() {
    let caps = vec![("xs".to_string(), f32s())];
    // A capture also read outside the element is not sliced, and a site that runs a
    // parallel operation before its last is not split.
    let two = Expr::Block {
        stmts: vec![Stmt::Let {
            pat: Pat::bind("s"),
            ty: Type::Scalar(ScalarType::F32),
            init: Some(Expr::par(
                ParOp::Reduce,
                vec![
                    add(),
                    Expr::Lit(crate::Lit::Float(0.0, None)),
                    Expr::var("xs"),
                ],
            )),
        }],
        result: Some(Box::new(map_of(
            "xs",
            binary(
                BinOp::Div,
                index(Expr::var("xs"), Expr::var("i")),
                Expr::var("s"),
            ),
        ))),
    };
    assert_eq!(
        split(&two, &caps, &f32s()).unwrap_err(),
        "it runs parallel operations before its last one"
    );
    // A loop splits where every `set` writes the row of its iteration's index.
    let tensor = Type::Tensor(Box::new(Type::Scalar(ScalarType::F32)));
    let with_t = vec![("t".to_string(), tensor)];
    let writes_at = |row: Expr| {
        Expr::par(
            ParOp::ParallelLoop,
            vec![
                Expr::Lit(crate::Lit::Int(4, Some(ScalarType::Usize))),
                Expr::Lambda {
                    params: vec![(Pat::bind("i"), usize_ty())],
                    body: Box::new(Expr::Method {
                        recv: Box::new(Expr::var("t")),
                        method: "set".into(),
                        args: vec![
                            Expr::Array(vec![row, Expr::int(0)]),
                            Expr::Lit(crate::Lit::Float(1.0, Some(ScalarType::F32))),
                        ],
                    }),
                },
            ],
        )
    };
    let own = split(&writes_at(Expr::var("i")), &with_t, &Type::Unit).unwrap();
    assert_eq!(own.written, vec!["t".to_string()]);
    assert!(matches!(own.combine, Combine::Nothing));
    assert!(
        own.part
            .to_string()
            .starts_with("(parallel_loop (- accel#hi accel#lo)"),
        "{}",
        own.part
    );
    let next = binary(BinOp::Add, Expr::var("i"), Expr::int(1));
    assert!(split(&writes_at(next), &with_t, &Type::Unit)
        .unwrap_err()
        .contains("not provably its iterations' own"));
    // A scatter's parts compute their (index, value) pairs; the combine writes them.
    let usizes = Type::Seq(Box::new(Type::Scalar(ScalarType::Usize)));
    let with_is = vec![("xs".to_string(), f32s()), ("is".to_string(), usizes)];
    let scatter = Expr::par(
        ParOp::Scatter,
        vec![Expr::var("xs"), Expr::var("is"), Expr::var("xs")],
    );
    let s = split(&scatter, &with_is, &f32s()).unwrap();
    assert_eq!(
        s.part_result,
        Type::Seq(Box::new(Type::Tuple(vec![
            usize_ty(),
            Type::Scalar(ScalarType::F32)
        ])))
    );
    // `xs` is also the destination: not sliced.
    assert_eq!(s.sliced, vec!["is".to_string()]);
    let Combine::Scatter { apply } = &s.combine else {
        panic!("{:?}", s.combine)
    };
    assert!(
        apply
            .to_string()
            .starts_with("(scatter xs (create (.len accel#partials)"),
        "{apply}"
    );
    let nested = Type::Seq(Box::new(f32s()));
    let rows = map_of("xs", Expr::var("xs"));
    // Rows made by `create` concatenate row by row; nested deeper, they do not split.
    assert!(split(&rows, &caps, &nested).is_ok());
    let deeper = Type::Seq(Box::new(nested.clone()));
    assert!(split(&map_of("xs", Expr::var("xs")), &caps, &deeper)
        .unwrap_err()
        .contains("only flat elements"));
    // `xs[i]` and `xs[0]`: xs is read outside its part.
    let both = map_of(
        "xs",
        binary(
            BinOp::Add,
            index(Expr::var("xs"), Expr::var("i")),
            index(Expr::var("xs"), Expr::int(0)),
        ),
    );
    assert!(split(&both, &caps, &f32s()).unwrap().sliced.is_empty());
}

#[test]
fn a_map_fusion_left_splits_as_the_create_it_stands_for() {
    let double = Expr::Lambda {
        params: vec![(Pat::bind("x"), Type::Scalar(ScalarType::F32))],
        body: Box::new(binary(BinOp::Mul, Expr::var("x"), Expr::var("x"))),
    };
    let body = Expr::par(ParOp::Map, vec![double, Expr::var("xs")]);
    let caps = vec![("xs".to_string(), f32s())];
    let s = split(&body, &caps, &f32s()).unwrap();
    assert!(matches!(s.combine, Combine::Concat));
    assert_eq!(s.sliced, vec!["xs".to_string()]);
    let part = print_expr(&s.part);
    assert!(part.starts_with("(create (- accel#hi accel#lo)"), "{part}");
    assert!(part.contains("(let x: f32 (index xs accel#j))"), "{part}");
}

#[test]
fn a_flatten_of_rows_made_by_create_splits_as_its_rows_flattened_after() {
    // flatten(create(xs.len(), |i| create(3, |k| xs[i]))): the parts make rows, which
    // concatenate row by row; their columns are the flattened result.
    let row = Expr::par(
        ParOp::Create,
        vec![
            Expr::int(3),
            Expr::Lambda {
                params: vec![(Pat::bind("k"), usize_ty())],
                body: Box::new(index(Expr::var("xs"), Expr::var("i"))),
            },
        ],
    );
    let body = Expr::par(ParOp::Flatten, vec![map_of("xs", row)]);
    let caps = vec![("xs".to_string(), f32s())];
    let s = split(&body, &caps, &f32s()).unwrap();
    assert!(s.flattened);
    assert!(matches!(s.combine, Combine::Concat));
    assert_eq!(s.part_result, Type::Seq(Box::new(f32s())));
    assert_eq!(s.elem, f32s());
    assert_eq!(s.sliced, vec!["xs".to_string()]);
    assert_eq!(print_expr(&s.length), "(.len xs)");
    let part = print_expr(&s.part);
    assert!(part.starts_with("(create (- accel#hi accel#lo)"), "{part}");
    assert!(part.contains("(index xs accel#j)"), "{part}");
}

#[test]
fn a_flatten_of_what_does_not_split_says_why() {
    let body = Expr::par(ParOp::Flatten, vec![Expr::var("xss")]);
    let caps = vec![("xss".to_string(), Type::Seq(Box::new(f32s())))];
    let why = split(&body, &caps, &f32s()).unwrap_err();
    assert!(
        why.starts_with("its `flatten`'s rows do not split: "),
        "{why}"
    );
}

#[test]
fn a_capture_read_through_an_alias_is_sliced_like_one_read_directly() {
    // { let p = xs; reduce(add, 0.0, p) }: as a later stage reads an earlier one's result.
    let body = Expr::Block {
        stmts: vec![crate::Stmt::Let {
            pat: Pat::bind("p"),
            ty: f32s(),
            init: Some(Expr::var("xs")),
        }],
        result: Some(Box::new(Expr::par(
            ParOp::Reduce,
            vec![
                add(),
                Expr::Lit(crate::Lit::Float(0.0, None)),
                Expr::var("p"),
            ],
        ))),
    };
    let caps = vec![("xs".to_string(), f32s())];
    let s = split(&body, &caps, &Type::Scalar(ScalarType::F32)).unwrap();
    assert_eq!(s.sliced, vec!["xs".to_string()]);
    assert!(
        !print_expr(&s.part).contains(" p"),
        "{}",
        print_expr(&s.part)
    );
}
