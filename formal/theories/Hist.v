(** Histograms of records in cells: the sensitivity lemmas behind every count transformation
    (docs/proofs/dyadic_counts.rst, tree_projection.rst, occupancy_scores.rst,
    gaussian_counts.rst, split_order.rst, noisy_size.rst).

    A level is any function from a record to a cell (a natural number) and a duplicate-free list
    of cells: the dyadic levels of any split order, the depths of a tree (a record below a leaf
    shallower than the depth lands in no listed cell), the candidates.  Nothing here depends on
    how the cell is computed, which is the content of the split-order page. *)
From Coq Require Import Reals Lra Lia List Permutation Arith.
From OWFormal Require Import Sums Neighbours.
Import ListNotations.
Open Scope R_scope.

Section Hist.
Variable A : Type.

Definition count (f : A -> nat) (xs : list A) (b : nat) : nat :=
  length (filter (fun x => Nat.eqb (f x) b) xs).

Lemma count_app f l1 l2 b : count f (l1 ++ l2) b = (count f l1 b + count f l2 b)%nat.
Proof. unfold count. rewrite filter_app, app_length. reflexivity. Qed.

Lemma count_perm f l1 l2 b : Permutation l1 l2 -> count f l1 b = count f l2 b.
Proof.
  intros H. unfold count. induction H; simpl; auto.
  - destruct (Nat.eqb (f x) b); simpl; auto.
  - destruct (Nat.eqb (f x) b), (Nat.eqb (f y) b); simpl; auto.
  - congruence.
Qed.

Definition cR f xs b := INR (count f xs b).

(** The indicator of one record sums to at most 1 over duplicate-free cells. *)
Lemma indicator_sum_le1 (bins : list nat) (c : nat) :
  NoDup bins -> sumR bins (fun b => if Nat.eqb c b then 1 else 0) <= 1.
Proof.
  induction bins as [|b0 t IH]; simpl; intros Hnd; [lra|].
  inversion Hnd as [|? ? Hni Hnd']; subst.
  destruct (Nat.eqb_spec c b0) as [->|Hne].
  - assert (sumR t (fun b => if Nat.eqb b0 b then 1 else 0) = 0).
    { transitivity (sumR t (fun _ => 0)); [|apply sumR_zero]. apply sumR_ext. intros x Hx.
      destruct (Nat.eqb_spec b0 x); [subst; contradiction|reflexivity]. }
    lra.
  - specialize (IH Hnd'). lra.
Qed.

Lemma sum_count_le f (bins : list nat) (a : list A) :
  NoDup bins -> sumR bins (cR f a) <= INR (length a).
Proof.
  intros Hnd. induction a as [|x a IH].
  - unfold cR, count. simpl. rewrite sumR_zero. lra.
  - assert (Hs : forall b, cR f (x :: a) b = (if Nat.eqb (f x) b then 1 else 0) + cR f a b).
    { intros b. unfold cR, count. simpl. destruct (Nat.eqb (f x) b); simpl length;
      [rewrite S_INR|]; lra. }
    rewrite (sumR_ext _ _ _ (fun b _ => Hs b)), sumR_plus.
    pose proof (indicator_sum_le1 bins (f x) Hnd).
    change (length (x :: a)) with (S (length a)). rewrite S_INR. lra.
Qed.

Lemma cR_nonneg f xs b : 0 <= cR f xs b.
Proof. apply pos_INR. Qed.

(** l1 distance of one level's histograms. *)
Definition l1 (bins : list nat) (f : A -> nat) (xs ys : list A) : R :=
  sumR bins (fun b => Rabs (cR f xs b - cR f ys b)).

Lemma cR_app f l1' l2 b : cR f (l1' ++ l2) b = cR f l1' b + cR f l2 b.
Proof. unfold cR. rewrite count_app, plus_INR. reflexivity. Qed.

Lemma l1_decomp bins f xs ys c a b :
  NoDup bins -> Permutation xs (c ++ a) -> Permutation ys (c ++ b) ->
  l1 bins f xs ys <= INR (length a) + INR (length b).
Proof.
  intros Hnd Ha Hb. unfold l1.
  eapply Rle_trans with (sumR bins (fun z => cR f a z + cR f b z)).
  - apply sumR_le. intros z _.
    unfold cR at 1 2. rewrite (count_perm f _ _ z Ha), (count_perm f _ _ z Hb).
    fold (cR f (c ++ a) z). fold (cR f (c ++ b) z). rewrite !cR_app.
    pose proof (cR_nonneg f a z). pose proof (cR_nonneg f b z).
    unfold Rabs. destruct Rcase_abs; lra.
  - rewrite sumR_plus. pose proof (sum_count_le f bins a Hnd). pose proof (sum_count_le f bins b Hnd). lra.
Qed.

(** A level of a hierarchy: a weight ([1/sigma_j], or [1/sigma_j^2]), a cell map and its cells. *)
Record level := { weight : R; cell : A -> nat; cells : list nat }.

Definition level_ok (L : level) := 0 <= weight L /\ NoDup (cells L).

(** The root is charged only without a public size under [symmetric_distance]. *)
Definition root_charged (k : kind) (n : option nat) : bool :=
  match n, k with None, Sym => true | _, _ => false end.

(** [d_{l1(s)}(F(x), F(x'))]: the root (the number of records, weight [w0]) and the levels. *)
Definition hier_l1 (w0 : R) (levels : list level) (xs ys : list A) : R :=
  w0 * Rabs (INR (length xs) - INR (length ys)) +
  sumR levels (fun L => weight L * l1 (cells L) (cell L) xs ys).

(** Lemma A.3 with the metrics explicit (docs/proofs/dyadic_counts.rst, tree_projection.rst):
    [d_{l1(s)}(F(x), F(x')) <= 2 rep(kind, d_in) (sum_{j in J} w_j)]. *)
Theorem hier_l1_stability k n d (w0 : R) (levels : list level) (xs ys : list A) :
  0 <= w0 -> (forall L, In L levels -> level_ok L) -> close k n d xs ys ->
  hier_l1 w0 levels xs ys <=
    2 * rep k d * (sumR levels weight + (if root_charged k n then w0 else 0)).
Proof.
  intros Hw0 Hok Hc.
  destruct (close_decomp k n d xs ys Hc) as (c & a & b & Ha & Hb & H2 & Hs & Hu & _).
  unfold hier_l1.
  assert (Hlv : sumR levels (fun L => weight L * l1 (cells L) (cell L) xs ys)
                <= sumR levels (fun L => weight L * (2 * rep k d))).
  { apply sumR_le. intros L HL. destruct (Hok L HL) as [Hw Hnd].
    apply Rmult_le_compat_l; [exact Hw|].
    eapply Rle_trans; [apply (l1_decomp _ _ _ _ c a b Hnd Ha Hb)|exact H2]. }
  rewrite (sumR_ext _ (fun L => weight L * (2 * rep k d)) (fun L => 2 * rep k d * weight L))
    in Hlv by (intros; ring).
  rewrite sumR_scal in Hlv.
  apply Permutation_length in Ha, Hb. rewrite app_length in Ha, Hb.
  rewrite Ha, Hb, !plus_INR.
  destruct n as [m|].
  - simpl. destruct (Hs ltac:(discriminate)) as [Hab _]. rewrite Hab.
    replace (INR (length c) + INR (length b) - (INR (length c) + INR (length b))) with 0 by ring.
    rewrite Rabs_R0. lra.
  - destruct (Hu eq_refl) as [-> Hd]. simpl.
    assert (Rabs (INR (length c) + INR (length a) - (INR (length c) + INR (length b)))
            <= INR (length a) + INR (length b)).
    { pose proof (pos_INR (length a)). pose proof (pos_INR (length b)).
      unfold Rabs. destruct Rcase_abs; lra. }
    assert (w0 * Rabs (INR (length c) + INR (length a) - (INR (length c) + INR (length b)))
            <= w0 * (2 * rep Sym d)).
    { apply Rmult_le_compat_l; [exact Hw0|]. lra. }
    simpl in *. unfold rep in *. lra.
Qed.

(** The split-order page: the bound holds for every family of cell maps, so two split orders
    (or any two families of levels with the same weights) get the same map. *)
Corollary split_order_invariance k n d w0 (levels levels' : list level) xs ys :
  0 <= w0 -> (forall L, In L levels -> level_ok L) -> (forall L, In L levels' -> level_ok L) ->
  map weight levels = map weight levels' -> close k n d xs ys ->
  hier_l1 w0 levels xs ys <= 2 * rep k d * (sumR levels weight + (if root_charged k n then w0 else 0)) /\
  hier_l1 w0 levels' xs ys <= 2 * rep k d * (sumR levels weight + (if root_charged k n then w0 else 0)).
Proof.
  intros H0 H1 H2 Hw Hc. split; [apply hier_l1_stability; auto|].
  replace (sumR levels weight) with (sumR levels' weight).
  - apply hier_l1_stability; auto.
  - transitivity (sumR (map weight levels') (fun w => w)); [rewrite sumR_map; reflexivity|].
    rewrite <- Hw, sumR_map. reflexivity.
Qed.

(** ---- squared l2 (the zCDP maps, docs/proofs/gaussian_counts.rst) ---- *)

Definition l2sq (bins : list nat) (f : A -> nat) (xs ys : list A) : R :=
  sumR bins (fun b => (cR f xs b - cR f ys b) ^ 2).

Lemma sum_sq_le_sq_sum {X} (l : list X) g :
  (forall x, In x l -> 0 <= g x) -> sumR l (fun x => g x ^ 2) <= (sumR l g) ^ 2.
Proof.
  induction l as [|x t IH]; cbn [sumR]; intros H; [lra|].
  assert (0 <= g x) by (apply H; left; reflexivity).
  assert (0 <= sumR t g) by (apply sumR_nonneg; intros; apply H; right; assumption).
  assert (sumR t (fun y => g y ^ 2) <= sumR t g ^ 2) by (apply IH; intros; apply H; right; assumption).
  assert (0 <= g x * sumR t g) by (apply Rmult_le_pos; auto).
  replace ((g x + sumR t g) ^ 2) with (g x ^ 2 + 2 * (g x * sumR t g) + sumR t g ^ 2) by ring.
  lra.
Qed.

Lemma l2sq_decomp bins f xs ys c a b :
  NoDup bins -> Permutation xs (c ++ a) -> Permutation ys (c ++ b) ->
  l2sq bins f xs ys <= INR (length a) ^ 2 + INR (length b) ^ 2.
Proof.
  intros Hnd Ha Hb. unfold l2sq.
  eapply Rle_trans with (sumR bins (fun z => cR f a z ^ 2 + cR f b z ^ 2)).
  - apply sumR_le. intros z _.
    unfold cR at 1 2. rewrite (count_perm f _ _ z Ha), (count_perm f _ _ z Hb).
    fold (cR f (c ++ a) z). fold (cR f (c ++ b) z). rewrite !cR_app.
    pose proof (cR_nonneg f a z). pose proof (cR_nonneg f b z). nra.
  - rewrite sumR_plus.
    assert (sumR bins (fun z => cR f a z ^ 2) <= INR (length a) ^ 2).
    { eapply Rle_trans; [apply sum_sq_le_sq_sum; intros; apply cR_nonneg|].
      pose proof (sum_count_le f bins a Hnd). pose proof (sumR_nonneg bins (cR f a) (fun z _ => cR_nonneg f a z)). nra. }
    assert (sumR bins (fun z => cR f b z ^ 2) <= INR (length b) ^ 2).
    { eapply Rle_trans; [apply sum_sq_le_sq_sum; intros; apply cR_nonneg|].
      pose proof (sum_count_le f bins b Hnd). pose proof (sumR_nonneg bins (cR f b) (fun z _ => cR_nonneg f b z)). nra. }
    lra.
Qed.

(** [m]: the whole replacements (or, without a size, the records) that [d_in] allows. *)
Definition whole (k : kind) (n : option nat) (d : nat) : nat :=
  match n, k with Some _, Sym => Nat.div d 2 | _, _ => d end.

Definition hier_l2sq (w0 : R) (levels : list level) (xs ys : list A) : R :=
  w0 * (INR (length xs) - INR (length ys)) ^ 2 +
  sumR levels (fun L => weight L * l2sq (cells L) (cell L) xs ys).

Lemma half_le (a d : nat) : (a + a <= d)%nat -> (a <= Nat.div d 2)%nat.
Proof.
  intros H. pose proof (Nat.div_mod d 2 ltac:(lia)). pose proof (Nat.mod_upper_bound d 2 ltac:(lia)). lia.
Qed.

(** The dyadic l2sq map: [2 m^2 sum_{j >= 1} w_j] with a public size, [k^2 sum_{j >= 0} w_j]
    without (docs/proofs/gaussian_counts.rst). *)
Theorem hier_l2sq_stability k n d (w0 : R) (levels : list level) (xs ys : list A) :
  0 <= w0 -> (forall L, In L levels -> level_ok L) -> close k n d xs ys ->
  hier_l2sq w0 levels xs ys <=
    INR (whole k n d) ^ 2 *
    (match n with Some _ => 2 * sumR levels weight | None => sumR levels weight + w0 end).
Proof.
  intros Hw0 Hok Hc.
  destruct (close_decomp k n d xs ys Hc) as (c & a & b & Ha & Hb & H2 & Hs & Hu & _).
  assert (Hlv : forall B, INR (length a) ^ 2 + INR (length b) ^ 2 <= B ->
      sumR levels (fun L => weight L * l2sq (cells L) (cell L) xs ys) <= B * sumR levels weight).
  { intros B HB. rewrite <- sumR_scal. apply sumR_le. intros L HL. destruct (Hok L HL) as [Hw Hnd].
    rewrite (Rmult_comm B). apply Rmult_le_compat_l; [exact Hw|].
    eapply Rle_trans; [apply (l2sq_decomp _ _ _ _ c a b Hnd Ha Hb)|exact HB]. }
  unfold hier_l2sq.
  pose proof (pos_INR (length a)). pose proof (pos_INR (length b)).
  destruct n as [m|].
  - destruct (Hs ltac:(discriminate)) as [Hab Hr].
    assert (Hw : (length a <= whole k (Some m) d)%nat).
    { destruct Hc as [_ Hk]. destruct k; simpl.
      - destruct Hk as (c' & a' & b' & _ & _ & _).
        apply INR_le. unfold rep in Hr.
        assert (length a + length a <= d)%nat.
        { apply INR_le. rewrite plus_INR. lra. }
        apply le_INR, half_le, H1.
      - apply INR_le. unfold rep in Hr. exact Hr. }
    apply le_INR in Hw.
    apply Permutation_length in Ha, Hb. rewrite app_length in Ha, Hb.
    rewrite Ha, Hb, Hab.
    replace (INR (length c + length b) - INR (length c + length b)) with 0 by ring.
    specialize (Hlv (2 * INR (whole k (Some m) d) ^ 2)).
    rewrite Hab in Hlv, Hw. assert (INR (length b) ^ 2 <= INR (whole k (Some m) d) ^ 2) by nra.
    specialize (Hlv ltac:(nra)). nra.
  - destruct (Hu eq_refl) as [-> Hd]. simpl whole.
    apply le_INR in Hd. rewrite plus_INR in Hd.
    specialize (Hlv (INR d ^ 2) ltac:(nra)).
    apply Permutation_length in Ha, Hb. rewrite app_length in Ha, Hb. rewrite Ha, Hb, !plus_INR.
    assert ((INR (length c) + INR (length a) - (INR (length c) + INR (length b))) ^ 2 <= INR d ^ 2) by nra.
    assert (w0 * (INR (length c) + INR (length a) - (INR (length c) + INR (length b))) ^ 2 <= w0 * INR d ^ 2)
      by (apply Rmult_le_compat_l; auto).
    nra.
Qed.

(** ---- statistics of the occupancy kind (docs/proofs/occupancy_scores.rst) ---- *)

(** A statistic that adding one record raises by 0 or 1 (occupancy, capped counts, their
    minimum with a public cap), invariant under permutations. *)
Definition unit_monotone (S : list A -> R) :=
  (forall l1' l2, Permutation l1' l2 -> S l1' = S l2) /\
  (forall x l, S l <= S (x :: l) <= S l + 1).

(** A statistic that adding one record moves by at most 1 (a child imbalance). *)
Definition unit_lipschitz (S : list A -> R) :=
  (forall l1' l2, Permutation l1' l2 -> S l1' = S l2) /\
  (forall x l, Rabs (S (x :: l) - S l) <= 1).

Lemma monotone_app S c a : unit_monotone S -> S c <= S (c ++ a) <= S c + INR (length a).
Proof.
  intros [Hp Hm]. induction a as [|x a IH].
  - rewrite app_nil_r. simpl. lra.
  - rewrite (Hp (c ++ x :: a) (x :: c ++ a)) by (symmetry; apply Permutation_middle).
    specialize (Hm x (c ++ a)). simpl length. rewrite S_INR. lra.
Qed.

Lemma lipschitz_app S c a : unit_lipschitz S -> Rabs (S (c ++ a) - S c) <= INR (length a).
Proof.
  intros [Hp Hm]. induction a as [|x a IH].
  - rewrite app_nil_r. simpl. replace (S c - S c) with 0 by ring. rewrite Rabs_R0. lra.
  - rewrite (Hp (c ++ x :: a) (x :: c ++ a)) by (symmetry; apply Permutation_middle).
    specialize (Hm x (c ++ a)). simpl length. rewrite S_INR.
    revert IH Hm. unfold Rabs. repeat destruct Rcase_abs; lra.
Qed.

(** The occupancy stability map: [d_in] without a public size, [floor(rep)] with one. *)
Definition occ_map (k : kind) (n : option nat) (d : nat) : nat := whole k n d.

Theorem monotone_stability S k n d xs ys :
  unit_monotone S -> close k n d xs ys -> Rabs (S xs - S ys) <= INR (occ_map k n d).
Proof.
  intros HS Hc. pose proof HS as [Hp _].
  destruct (close_decomp k n d xs ys Hc) as (c & a & b & Ha & Hb & H2 & Hs & Hu & _).
  rewrite (Hp _ _ Ha), (Hp _ _ Hb).
  pose proof (monotone_app S c a HS). pose proof (monotone_app S c b HS).
  assert (Hmax : Rabs (S (c ++ a) - S (c ++ b)) <= Rmax (INR (length a)) (INR (length b))).
  { pose proof (Rmax_l (INR (length a)) (INR (length b))). pose proof (Rmax_r (INR (length a)) (INR (length b))).
    unfold Rabs. destruct Rcase_abs; lra. }
  eapply Rle_trans; [exact Hmax|].
  destruct n as [m|].
  - destruct (Hs ltac:(discriminate)) as [Hab Hr]. rewrite Hab, Rmax_left by lra.
    destruct Hc as [_ Hk]. destruct k; simpl.
    + apply le_INR. apply half_le. apply INR_le. rewrite plus_INR. unfold rep in Hr. rewrite <- Hab. lra.
    + unfold rep in Hr. rewrite <- Hab. exact Hr.
  - destruct (Hu eq_refl) as [-> Hd]. simpl. apply le_INR in Hd. rewrite plus_INR in Hd.
    pose proof (pos_INR (length a)). pose proof (pos_INR (length b)).
    apply Rmax_lub; lra.
Qed.

Theorem lipschitz_stability S k n d xs ys :
  unit_lipschitz S -> close k n d xs ys ->
  Rabs (S xs - S ys) <= (if sized n then 2 else 1) * units k n d.
Proof.
  intros HS Hc. pose proof HS as [Hp _].
  destruct (close_decomp k n d xs ys Hc) as (c & a & b & Ha & Hb & H2 & Hs & Hu & Hun).
  rewrite (Hp _ _ Ha), (Hp _ _ Hb).
  pose proof (lipschitz_app S c a HS). pose proof (lipschitz_app S c b HS).
  eapply Rle_trans; [|exact Hun].
  revert H H0. unfold Rabs. repeat destruct Rcase_abs; lra.
Qed.

(** The occupancy [O(x) = #{cells with a record}] and its capped forms are unit-monotone. *)
Definition occupancy (bins : list nat) (f : A -> nat) (xs : list A) : R :=
  INR (length (filter (fun b => Nat.ltb 0 (count f xs b)) bins)).

Lemma filter_length_mono {X} (p q : X -> bool) (l : list X) :
  (forall x, p x = true -> q x = true) -> (length (filter p l) <= length (filter q l))%nat.
Proof.
  intros H. induction l as [|x t IH]; simpl; [lia|].
  destruct (p x) eqn:E; [rewrite (H x E); simpl; lia|destruct (q x); simpl; lia].
Qed.

Lemma filter_length_or {X} (p q r : X -> bool) (l : list X) :
  (forall x, p x = true -> q x = true \/ r x = true) ->
  (length (filter p l) <= length (filter q l) + length (filter r l))%nat.
Proof.
  intros H. induction l as [|x t IH]; simpl; [lia|].
  destruct (p x) eqn:E.
  - destruct (H x E) as [Hq|Hr]; [rewrite Hq; destruct (r x)|rewrite Hr; destruct (q x)]; simpl; lia.
  - destruct (q x), (r x); simpl; lia.
Qed.

Lemma filter_eq_le1 (bins : list nat) (c : nat) :
  NoDup bins -> (length (filter (fun b => Nat.eqb c b) bins) <= 1)%nat.
Proof.
  induction bins as [|b0 t IH]; simpl; intros Hnd; [lia|].
  inversion Hnd as [|? ? Hni Hnd']; subst.
  destruct (Nat.eqb_spec c b0) as [->|Hne]; simpl.
  - assert (filter (fun b => Nat.eqb b0 b) t = []).
    { clear IH Hnd Hnd'. induction t as [|b1 t' IH']; simpl; [reflexivity|].
      destruct (Nat.eqb_spec b0 b1); [subst; simpl in Hni; tauto|]. apply IH'. simpl in Hni; tauto. }
    rewrite H. simpl. lia.
  - apply IH, Hnd'.
Qed.

Lemma occupancy_unit_monotone bins f : NoDup bins -> unit_monotone (occupancy bins f).
Proof.
  intros Hnd. split.
  - intros l1' l2 Hp. unfold occupancy. f_equal. f_equal. apply filter_ext. intros b.
    rewrite (count_perm f _ _ b Hp). reflexivity.
  - intros x l. unfold occupancy.
    assert (Hc : forall b, count f (x :: l) b = ((if Nat.eqb (f x) b then 1 else 0) + count f l b)%nat).
    { intros b. unfold count. simpl. destruct (Nat.eqb (f x) b); reflexivity. }
    split.
    + apply le_INR, filter_length_mono. intros b Hb. rewrite Hc.
      apply Nat.ltb_lt in Hb. apply Nat.ltb_lt. lia.
    + rewrite <- S_INR. apply le_INR.
      eapply Nat.le_trans; [apply (filter_length_or _ (fun b => Nat.ltb 0 (count f l b)) (fun b => Nat.eqb (f x) b))|].
      * intros b Hb. rewrite Hc in Hb. apply Nat.ltb_lt in Hb.
        destruct (Nat.eqb (f x) b); [right; reflexivity|left; apply Nat.ltb_lt; simpl in Hb; lia].
      * pose proof (filter_eq_le1 bins (f x) Hnd). lia.
Qed.

(** [min(S, K)] of a unit-monotone statistic is unit-monotone (the capped occupancy). *)
Lemma min_unit_monotone S K : unit_monotone S -> unit_monotone (fun l => Rmin (S l) K).
Proof.
  intros [Hp Hm]. split.
  - intros l1' l2 H. rewrite (Hp _ _ H). reflexivity.
  - intros x l. specialize (Hm x l).
    unfold Rmin. repeat destruct Rle_dec; lra.
Qed.

(** The sum of unit-monotone statistics over disjoint supports is not unit-monotone in general;
    the capped-count score [sum_v min(c_v, tau)] is, because one record enters one cell. *)
Lemma capped_counts_unit_monotone bins f (tau : nat -> nat) :
  NoDup bins ->
  unit_monotone (fun l => sumR bins (fun b => INR (Nat.min (count f l b) (tau b)))).
Proof.
  intros Hnd. split.
  - intros l1' l2 Hp. apply sumR_ext. intros b _. rewrite (count_perm f _ _ b Hp). reflexivity.
  - intros x l.
    assert (Hc : forall b, count f (x :: l) b = ((if Nat.eqb (f x) b then 1 else 0) + count f l b)%nat).
    { intros b. unfold count. simpl. destruct (Nat.eqb (f x) b); reflexivity. }
    assert (Hstep : forall b, INR (Nat.min (count f l b) (tau b)) <= INR (Nat.min (count f (x :: l) b) (tau b))
                    <= INR (Nat.min (count f l b) (tau b)) + (if Nat.eqb (f x) b then 1 else 0)).
    { intros b. rewrite Hc. destruct (Nat.eqb (f x) b).
      - split; [apply le_INR; lia|].
        assert (Hm : (Nat.min (1 + count f l b) (tau b) <= Nat.min (count f l b) (tau b) + 1)%nat) by lia.
        apply le_INR in Hm. rewrite plus_INR in Hm. simpl INR in Hm at 2. exact Hm.
      - rewrite Nat.add_0_l. lra. }
    split.
    + apply sumR_le. intros b _. apply Hstep.
    + pose proof (indicator_sum_le1 bins (f x) Hnd).
      assert (sumR bins (fun b => INR (Nat.min (count f (x :: l) b) (tau b))) <=
              sumR bins (fun b => INR (Nat.min (count f l b) (tau b)) + (if Nat.eqb (f x) b then 1 else 0)))
        by (apply sumR_le; intros b _; apply Hstep).
      rewrite sumR_plus in H0. lra.
Qed.

(** ---- row-wise maps (make_nearest_candidate, make_table_encoding) and the row count ---- *)

Theorem rowwise_stability {B} (g : A -> B) k n d (xs ys : list A) :
  close k n d xs ys -> close k n d (map g xs) (map g ys).
Proof.
  intros [Hn Hk]. split.
  - destruct n; [rewrite !map_length; exact Hn|exact I].
  - destruct k.
    + destruct Hk as (c & a & b & Ha & Hb & Hd). exists (map g c), (map g a), (map g b).
      rewrite <- !map_app, !map_length. repeat split; auto; apply Permutation_map; auto.
    + destruct Hk as [Hs [Hl (c & a & b & Ha & Hb & Hd)]]. split; [exact Hs|].
      split; [rewrite !map_length; exact Hl|].
      exists (map g c), (map g a), (map g b).
      rewrite <- !map_app, !map_length. repeat split; auto; apply Permutation_map; auto.
Qed.

(** A multiset map that one more record extends by one output (up to order) is stable with
    [d_out = d_in], as a row-wise map is: the tie rule of make_nearest_candidate
    (docs/proofs/tree_projection.rst, "Ties") is such a map, [deal] below. *)
Section UnitAdditive.
Variable B : Type.
Variable F : list A -> list B.
Hypothesis F_nil : F [] = [].
Hypothesis F_perm : forall xs ys, Permutation xs ys -> Permutation (F xs) (F ys).
Hypothesis F_snoc : forall xs x, exists y, Permutation (F (xs ++ [x])) (F xs ++ [y]).

Lemma unit_additive_app c a :
  exists a', Permutation (F (c ++ a)) (F c ++ a') /\ length a' = length a.
Proof.
  induction a as [|x a IH] using rev_ind.
  - exists []. rewrite !app_nil_r. split; [apply Permutation_refl|reflexivity].
  - destruct IH as (a' & Hp & Hl). destruct (F_snoc (c ++ a) x) as [y Hy].
    exists (a' ++ [y]). rewrite app_assoc. split.
    + eapply Permutation_trans; [exact Hy|]. rewrite app_assoc. apply Permutation_app_tail. exact Hp.
    + rewrite !app_length, Hl. reflexivity.
Qed.

Lemma unit_additive_length xs : length (F xs) = length xs.
Proof.
  destruct (unit_additive_app [] xs) as (a' & Hp & Hl). simpl in Hp. rewrite F_nil in Hp.
  apply Permutation_length in Hp. simpl in Hp. lia.
Qed.

Theorem unit_additive_stability k n d (xs ys : list A) :
  close k n d xs ys -> close k n d (F xs) (F ys).
Proof.
  intros [Hn Hk]. split.
  - destruct n; [rewrite !unit_additive_length; exact Hn|exact I].
  - destruct k.
    + destruct Hk as (c & a & b & Ha & Hb & Hd).
      destruct (unit_additive_app c a) as (a' & Hpa & Hla).
      destruct (unit_additive_app c b) as (b' & Hpb & Hlb).
      exists (F c), a', b'. repeat split; [| |lia].
      * eapply Permutation_trans; [apply F_perm; exact Ha|exact Hpa].
      * eapply Permutation_trans; [apply F_perm; exact Hb|exact Hpb].
    + destruct Hk as [Hs [Hl (c & a & b & Ha & Hb & Hd)]]. split; [exact Hs|].
      split; [rewrite !unit_additive_length; exact Hl|].
      destruct (unit_additive_app c a) as (a' & Hpa & Hla).
      destruct (unit_additive_app c b) as (b' & Hpb & Hlb).
      exists (F c), a', b'. repeat split; [| |lia].
      * eapply Permutation_trans; [apply F_perm; exact Ha|exact Hpa].
      * eapply Permutation_trans; [apply F_perm; exact Hb|exact Hpb].
Qed.
End UnitAdditive.

(** The tie rule: [cls x] is the tie set of a record (a class id; a record with one nearest
    candidate is a class of one), [classes] lists every class once, and the [g] records of class
    [s] are dealt to [pick s 0, ..., pick s (g - 1)] ([pick s j = s_T[j mod t]], for any fixed
    [pick]).  Up to order this is the projection's output, so it is stable with [d_out = d_in]. *)
Section Deal.
Variable B : Type.
Variable cls : A -> nat.
Variable classes : list nat.
Variable pick : nat -> nat -> B.
Hypothesis classes_nodup : NoDup classes.
Hypothesis classes_all : forall x, In (cls x) classes.

Definition in_class (s : nat) (xs : list A) : nat :=
  length (filter (fun x => Nat.eqb (cls x) s) xs).

Definition deal (xs : list A) : list B :=
  flat_map (fun s => map (pick s) (seq 0 (in_class s xs))) classes.

Lemma in_class_perm s xs ys : Permutation xs ys -> in_class s xs = in_class s ys.
Proof.
  intros H. unfold in_class. induction H; simpl; auto.
  - destruct (Nat.eqb (cls x) s); simpl; auto.
  - destruct (Nat.eqb (cls x) s), (Nat.eqb (cls y) s); simpl; auto.
  - congruence.
Qed.

Lemma in_class_snoc s xs x :
  in_class s (xs ++ [x]) = (in_class s xs + if Nat.eqb (cls x) s then 1 else 0)%nat.
Proof.
  unfold in_class. rewrite filter_app, app_length. simpl. destruct (Nat.eqb (cls x) s); reflexivity.
Qed.

Lemma deal_snoc_classes (l : list nat) xs x :
  NoDup l ->
  (In (cls x) l -> Permutation
     (flat_map (fun s => map (pick s) (seq 0 (in_class s (xs ++ [x])))) l)
     (flat_map (fun s => map (pick s) (seq 0 (in_class s xs))) l ++ [pick (cls x) (in_class (cls x) xs)])) /\
  (~ In (cls x) l ->
     flat_map (fun s => map (pick s) (seq 0 (in_class s (xs ++ [x])))) l =
     flat_map (fun s => map (pick s) (seq 0 (in_class s xs))) l).
Proof.
  induction l as [|s l IH]; intros Hnd.
  - split; [intros []|reflexivity].
  - inversion Hnd as [|? ? Hns Hnd']; subst. destruct (IH Hnd') as [IHin IHout].
    simpl. rewrite (in_class_snoc s). split.
    + intros [Heq|Hin].
      * subst s. rewrite Nat.eqb_refl, IHout by exact Hns.
        rewrite Nat.add_1_r, seq_S, map_app. simpl.
        rewrite <- !app_assoc. apply Permutation_app_head. simpl.
        apply Permutation_cons_append.
      * assert (Hne : Nat.eqb (cls x) s = false) by (apply Nat.eqb_neq; intros E; subst; contradiction).
        rewrite Hne, Nat.add_0_r, <- app_assoc. apply Permutation_app_head. apply IHin. exact Hin.
    + intros Hno. assert (Hne : Nat.eqb (cls x) s = false)
        by (apply Nat.eqb_neq; intros E; apply Hno; left; congruence).
      rewrite Hne, Nat.add_0_r, IHout; [reflexivity|]. intros Hin. apply Hno. right. exact Hin.
Qed.

Theorem deal_stability k n d (xs ys : list A) :
  close k n d xs ys -> close k n d (deal xs) (deal ys).
Proof.
  apply unit_additive_stability.
  - unfold deal, in_class. simpl. generalize classes. intros l. induction l; simpl; auto.
  - intros a b H. unfold deal. erewrite flat_map_ext; [apply Permutation_refl|].
    intros s. simpl. rewrite (in_class_perm s a b H). reflexivity.
  - intros a x. exists (pick (cls x) (in_class (cls x) a)).
    apply (deal_snoc_classes classes a x classes_nodup). apply classes_all.
Qed.
End Deal.

(** make_row_count: [|n(x) - n(x')| <= d_in] under [symmetric_distance]. *)
Theorem row_count_stability d (xs ys : list A) :
  close Sym None d xs ys -> Rabs (INR (length xs) - INR (length ys)) <= INR d.
Proof.
  intros Hc. destruct (close_decomp _ _ _ xs ys Hc) as (c & a & b & Ha & Hb & _ & _ & Hu & _).
  destruct (Hu eq_refl) as [_ Hd].
  apply Permutation_length in Ha, Hb. rewrite app_length in Ha, Hb. rewrite Ha, Hb, !plus_INR.
  apply le_INR in Hd. rewrite plus_INR in Hd.
  pose proof (pos_INR (length a)). pose proof (pos_INR (length b)).
  unfold Rabs. destruct Rcase_abs; lra.
Qed.

End Hist.
