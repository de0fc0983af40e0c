(** The schedule scores and their sensitivity (docs/proofs/occupancy_scores.rst,
    split_order.rst): [B_a(x) = const_a + sum_j w_{a,j} T_j(x)], evaluated in floating point. *)
From Coq Require Import Reals Lra Lia List.
From OWFormal Require Import Sums Neighbours Hist Vec.
Import ListNotations.
Open Scope R_scope.

(** How a level's statistic moves per unit: not at all (level 0, or a function of the public
    size), by at most one (occupancy, capped counts: unit-monotone), or by one per added or
    removed record (a child imbalance: unit-Lipschitz, two per replacement). *)
Inductive move := Fixed | Monotone | Lipschitz.

Definition mult (mv : move) (n : option nat) : R :=
  match mv with Fixed => 0 | Monotone => 1 | Lipschitz => if sized n then 2 else 1 end.

Section Scores.
Variable A : Type.

Definition stat_ok (n : option nat) (mv : move) (T : list A -> R) : Prop :=
  forall k d xs ys, close k n d xs ys -> Rabs (T xs - T ys) <= mult mv n * INR (whole k n d).

Lemma monotone_ok n S : unit_monotone A S -> stat_ok n Monotone S.
Proof. intros H k d xs ys Hc. simpl. rewrite Rmult_1_l. apply (monotone_stability A S k n d xs ys H Hc). Qed.

Lemma lipschitz_ok n S : unit_lipschitz A S -> stat_ok n Lipschitz S.
Proof.
  intros HS k d xs ys Hc. pose proof HS as [Hp _].
  destruct (close_decomp k n d xs ys Hc) as (c & a & b & Ha & Hb & _ & Hs & Hu & _).
  rewrite (Hp _ _ Ha), (Hp _ _ Hb).
  pose proof (lipschitz_app A S c a HS). pose proof (lipschitz_app A S c b HS).
  assert (Hab : Rabs (S (c ++ a) - S (c ++ b)) <= INR (length a) + INR (length b)).
  { revert H H0. unfold Rabs. repeat destruct Rcase_abs; lra. }
  eapply Rle_trans; [exact Hab|]. destruct n as [m|].
  - pose proof (whole_ge A k (Some m) d a b Hs m eq_refl) as Hw. destruct (Hs ltac:(discriminate)) as [He _].
    apply le_INR in Hw. rewrite He in *. cbn [mult sized]. lra.
  - destruct (Hu eq_refl) as [-> Hd]. cbn [mult sized whole]. apply le_INR in Hd. rewrite plus_INR in Hd. lra.
Qed.

(** A statistic fixed to a constant (the paper score's [O_0 := 1]). *)
Lemma fixed_ok n (c : R) : stat_ok n Fixed (fun _ => c).
Proof. intros k d xs ys _. simpl. replace (c - c) with 0 by ring. rewrite Rabs_R0. lra. Qed.
End Scores.

(** The float evaluation of [c + sum_j w_j t_j] and the rounding error bound it obeys. *)
Parameter fl_score : R -> list R -> list R -> R.

Definition unit_roundoff : R := / 2 ^ 53.
Definition gamma (m : nat) : R := INR m * unit_roundoff / (1 - INR m * unit_roundoff).

Fixpoint dot (ws ts : list R) : R :=
  match ws, ts with w :: ws', t :: ts' => w * t + dot ws' ts' | _, _ => 0 end.

(** Higham, "Accuracy and Stability of Numerical Algorithms", 2nd ed. (2002), eq. (3.4) and
    Lemma 3.1 (a dot product of non-negative terms in any summation order, with the constant
    added, [m] = the number of terms): [|fl(s) - s| <= gamma_m s]. *)
Axiom higham_dot_error : forall c ws ts,
  0 <= c -> Forall (fun w => 0 <= w) ws -> Forall (fun t => 0 <= t) ts -> length ws = length ts ->
  (INR (length ws + 1) * unit_roundoff < 1) ->
  Rabs (fl_score c ws ts - (c + dot ws ts)) <= gamma (length ws + 1) * (c + dot ws ts).

Section Sensitivity.
Variable A : Type.
Variable n : option nat.
Variable c : R.
Variable ws : list R.
Variable stats : list (move * (list A -> R)).
Variable bounds : list R.
Hypothesis c_nonneg : 0 <= c.
Hypothesis ws_nonneg : Forall (fun w => 0 <= w) ws.
Hypothesis lengths : length ws = length stats /\ length bounds = length stats.
Hypothesis stats_ok : Forall (fun mt => stat_ok A n (fst mt) (snd mt)) stats.
Hypothesis stats_bounded : forall xs, Forall2 (fun mt b => 0 <= snd mt xs <= b) stats bounds.
Hypothesis small : INR (length ws + 1) * unit_roundoff < 1.

Definition stat_values (xs : list A) : list R := map (fun mt => snd mt xs) stats.
Definition score (xs : list A) : R := fl_score c ws (stat_values xs).
Definition delta_per_unit : R := dot ws (map (fun mt => mult (fst mt) n) stats).
Definition upper : R := c + dot ws bounds.

Lemma dot_diff ws' (st : list (move * (list A -> R))) k d xs ys :
  Forall (fun w => 0 <= w) ws' -> Forall (fun mt => stat_ok A n (fst mt) (snd mt)) st -> close k n d xs ys ->
  Rabs (dot ws' (map (fun mt => snd mt xs) st) - dot ws' (map (fun mt => snd mt ys) st))
    <= INR (whole k n d) * dot ws' (map (fun mt => mult (fst mt) n) st).
Proof.
  revert st. induction ws' as [|w ws' IH]; intros st Hw Hs Hc; destruct st as [|[mv T] st]; simpl;
    try (rewrite Rminus_0_r, Rabs_R0; lra).
  inversion Hw; inversion Hs; subst. simpl in *.
  specialize (IH st H2 H6 Hc). specialize (H5 k d xs ys Hc).
  replace (w * T xs + dot ws' (map (fun mt => snd mt xs) st) - (w * T ys + dot ws' (map (fun mt => snd mt ys) st)))
    with (w * (T xs - T ys) + (dot ws' (map (fun mt => snd mt xs) st) - dot ws' (map (fun mt => snd mt ys) st))) by ring.
  eapply Rle_trans; [apply Rabs_triang|]. rewrite Rabs_mult, (Rabs_pos_eq w) by auto.
  assert (w * Rabs (T xs - T ys) <= w * (mult mv n * INR (whole k n d))) by (apply Rmult_le_compat_l; auto).
  lra.
Qed.

Lemma dot_bound ws' xs (st : list (move * (list A -> R))) bs :
  Forall (fun w => 0 <= w) ws' -> Forall2 (fun mt b => 0 <= snd mt xs <= b) st bs ->
  0 <= dot ws' (map (fun mt => snd mt xs) st) <= dot ws' bs.
Proof.
  revert st bs. induction ws' as [|w ws' IH]; intros st bs Hw H; destruct H as [|[mv T] b st bs Hb H]; simpl; try lra.
  inversion Hw; subst. specialize (IH st bs H3 H). simpl in Hb.
  split; [apply Rplus_le_le_0_compat; [apply Rmult_le_pos; lra|lra]|].
  assert (w * T xs <= w * b) by (apply Rmult_le_compat_l; lra). lra.
Qed.

Lemma values_eq_when_zero (st : list (move * (list A -> R))) k d xs ys :
  Forall (fun mt => stat_ok A n (fst mt) (snd mt)) st -> close k n d xs ys -> whole k n d = 0%nat ->
  map (fun mt => snd mt xs) st = map (fun mt => snd mt ys) st.
Proof.
  induction st as [|[mv T] st IH]; intros Hs Hc H0; [reflexivity|].
  inversion Hs as [|? ? Hh Ht]; subst. simpl. f_equal; [|apply IH; auto].
  specialize (Hh k d xs ys Hc). simpl in Hh. rewrite H0 in Hh. simpl in Hh. rewrite Rmult_0_r in Hh.
  revert Hh. unfold Rabs. destruct Rcase_abs; intros; lra.
Qed.

(** The certified score sensitivity [Delta + 2 gamma U] of docs/proofs/occupancy_scores.rst:
    the float scores of two close data sets differ by at most [m Delta + 2 gamma U], [m] whole
    units ([0] units: the data sets are the same multiset and so are the scores). *)
Theorem score_sensitivity k d xs ys :
  close k n d xs ys ->
  Rabs (score xs - score ys) <=
    INR (whole k n d) * delta_per_unit + (if Nat.eqb (whole k n d) 0 then 0 else 2 * gamma (length ws + 1) * upper).
Proof.
  intros Hc. destruct lengths as [Hl1 Hl2].
  pose proof (dot_diff ws stats k d xs ys ws_nonneg stats_ok Hc) as Hd.
  unfold delta_per_unit.
  destruct (Nat.eqb_spec (whole k n d) 0) as [H0|H0].
  - unfold score, stat_values. rewrite (values_eq_when_zero stats k d xs ys stats_ok Hc H0).
    replace (fl_score c ws (map (fun mt => snd mt ys) stats) - fl_score c ws (map (fun mt => snd mt ys) stats)) with 0 by ring.
    rewrite Rabs_R0, H0. simpl. lra.
  - assert (Hg : 0 <= gamma (length ws + 1)).
    { unfold gamma, Rdiv. apply Rmult_le_pos.
      - apply Rmult_le_pos; [apply pos_INR|unfold unit_roundoff; left; apply Rinv_0_lt_compat, pow_lt; lra].
      - left. apply Rinv_0_lt_compat. lra. }
    assert (Hv : forall zs, Forall (fun t => 0 <= t) (stat_values zs) /\ length ws = length (stat_values zs)
                 /\ 0 <= c + dot ws (stat_values zs) <= upper).
    { intros zs. split; [|split].
      - unfold stat_values. apply Forall_forall. intros t Ht. apply in_map_iff in Ht. destruct Ht as ([mv T] & <- & Hin).
        pose proof (stats_bounded zs) as Hb. clear -Hb Hin.
        induction Hb as [|mt b st bs Hh Ht IH]; [contradiction|]. destruct Hin as [->|Hin]; [apply Hh|auto].
      - unfold stat_values. rewrite map_length. exact Hl1.
      - unfold upper, stat_values. pose proof (dot_bound ws zs stats bounds ws_nonneg (stats_bounded zs)). lra. }
    destruct (Hv xs) as (Hx1 & Hx2 & Hx3). destruct (Hv ys) as (Hy1 & Hy2 & Hy3).
    pose proof (higham_dot_error c ws (stat_values xs) c_nonneg ws_nonneg Hx1 Hx2 small) as Ex.
    pose proof (higham_dot_error c ws (stat_values ys) c_nonneg ws_nonneg Hy1 Hy2 small) as Ey.
    unfold score. fold (stat_values xs) in Hd. fold (stat_values ys) in Hd.
    set (ex := c + dot ws (stat_values xs)) in *. set (ey := c + dot ws (stat_values ys)) in *.
    assert (gamma (length ws + 1) * ex <= gamma (length ws + 1) * upper) by (apply Rmult_le_compat_l; lra).
    assert (gamma (length ws + 1) * ey <= gamma (length ws + 1) * upper) by (apply Rmult_le_compat_l; lra).
    assert (Hdiff : Rabs (ex - ey) <= INR (whole k n d) * dot ws (map (fun mt => mult (fst mt) n) stats)).
    { unfold ex, ey. replace (c + dot ws (stat_values xs) - (c + dot ws (stat_values ys)))
        with (dot ws (stat_values xs) - dot ws (stat_values ys)) by ring. exact Hd. }
    revert Ex Ey Hdiff. unfold Rabs. repeat destruct Rcase_abs; intros; lra.
Qed.

(** Per unit: [m Delta + 2 gamma U <= nu (Delta + 2 gamma U)] since [m <= nu] and [m >= 1]. *)
Theorem score_map_sound k d xs ys :
  close k n d xs ys ->
  Rabs (score xs - score ys) <= units k n d * (delta_per_unit + 2 * gamma (length ws + 1) * upper).
Proof.
  intros Hc. eapply Rle_trans; [apply score_sensitivity, Hc|].
  assert (Hw : INR (whole k n d) <= units k n d).
  { unfold units, whole. destruct n as [m|]; [destruct k|]; simpl; try lra.
    pose proof (Nat.div_mod d 2 ltac:(lia)). pose proof (Nat.mod_upper_bound d 2 ltac:(lia)).
    assert (INR (2 * Nat.div d 2) <= INR d) by (apply le_INR; lia). rewrite mult_INR in H1. simpl in H1. lra. }
  assert (Hd0 : 0 <= delta_per_unit).
  { unfold delta_per_unit. clear -ws_nonneg. revert stats. induction ws as [|w ws' IH]; intros st; destruct st; simpl; try lra.
    inversion ws_nonneg; subst. assert (0 <= mult (fst p) n) by (destruct (fst p); simpl; try lra; destruct (sized n); lra).
    pose proof (IH H2 st). assert (0 <= w * mult (fst p) n) by (apply Rmult_le_pos; auto). lra. }
  assert (Hg : 0 <= 2 * gamma (length ws + 1) * upper).
  { assert (0 <= gamma (length ws + 1)).
    { unfold gamma, Rdiv. apply Rmult_le_pos.
      - apply Rmult_le_pos; [apply pos_INR|unfold unit_roundoff; left; apply Rinv_0_lt_compat, pow_lt; lra].
      - left. apply Rinv_0_lt_compat. lra. }
    assert (0 <= upper).
    { unfold upper. pose proof (dot_bound ws [] stats bounds ws_nonneg (stats_bounded [])). lra. }
    nra. }
  destruct (Nat.eqb_spec (whole k n d) 0) as [H0|H0].
  - rewrite H0. simpl. assert (0 <= units k n d) by (rewrite H0 in Hw; simpl in Hw; lra). nra.
  - assert (1 <= INR (whole k n d)) by (apply (le_INR 1); lia). nra.
Qed.
End Sensitivity.
