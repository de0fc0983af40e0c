(** PrivTree (docs/proofs/privtree.rst) and the NN histogram (docs/proofs/nn_histogram.rst),
    and the real-arithmetic budget of the zCDP schedule (docs/proofs/zcdp_schedules.rst). *)
From Coq Require Import Reals Lra Lia List ZArith Permutation.
From OWFormal Require Import Sums Neighbours Hist DP Laplace.
Import ListNotations.
Open Scope R_scope.

(** The records and the structures (the split decisions) PrivTree releases. *)
Parameter Rec PTree : Type.
(** [privtree_law lam delta theta depth x t]: the probability of the structure [t] on data [x]. *)
Parameter privtree_law : R -> Z -> Z -> nat -> list Rec -> PTree -> R.

(** Zhang, Xiao, Xie, "PrivTree", SIGMOD 2016, Theorem 4.1 / Lemma 4.2 for fanout 2, in the
    integer form of docs/proofs/privtree.rst, Lemma 2: with [q = e^{-1/lambda}] and
    [q^delta <= 1/2], adding one record changes the probability of every structure by a
    factor within [e^{+-3/lambda}]. *)
Axiom privtree_structure_dp : forall lam delta theta depth x l t,
  0 < lam -> exp (- IZR delta / lam) <= / 2 ->
  privtree_law lam delta theta depth (x :: l) t <= exp (3 / lam) * privtree_law lam delta theta depth l t /\
  privtree_law lam delta theta depth l t <= exp (3 / lam) * privtree_law lam delta theta depth (x :: l) t.
(** A law of structures depends on the multiset of records only, and is a probability. *)
Axiom privtree_law_perm : forall lam delta theta depth l1 l2,
  Permutation l1 l2 -> privtree_law lam delta theta depth l1 = privtree_law lam delta theta depth l2.
Axiom privtree_law_nonneg : forall lam delta theta depth l t, 0 <= privtree_law lam delta theta depth l t.

Section PrivTree.
Variables (lam sc : R) (delta theta : Z) (depth : nat).
Hypothesis lam_pos : 0 < lam.
Hypothesis sc_pos : 0 < sc.
Hypothesis bias : exp (- IZR delta / lam) <= / 2.
(** Given a structure, its leaves and the leaf of a record. *)
Variable leaves : PTree -> list nat.
Variable leaf_of : PTree -> Rec -> nat.
Hypothesis leaves_nodup : forall t, NoDup (leaves t).

Definition leaf_counts (t : PTree) (xs : list Rec) : list Z :=
  map (fun b => Z.of_nat (count Rec (leaf_of t) xs b)) (leaves t).

(** The release: the structure, then [LapZ(sigma_c)] on every leaf count. *)
Definition privtree_release (xs : list Rec) (ty : PTree * list Z) : R :=
  privtree_law lam delta theta depth xs (fst ty) *
  vec_pmf (repeat sc (length (leaves (fst ty)))) (leaf_counts (fst ty) xs) (snd ty).

Lemma leaf_counts_one t x l :
  wl1 (repeat sc (length (leaves t))) (leaf_counts t (x :: l)) (leaf_counts t l) <= / sc /\
  wl1 (repeat sc (length (leaves t))) (leaf_counts t l) (leaf_counts t (x :: l)) <= / sc.
Proof.
  assert (H : forall xs ys, wl1 (repeat sc (length (leaves t))) (leaf_counts t xs) (leaf_counts t ys)
                = / sc * l1 Rec (leaves t) (leaf_of t) xs ys).
  { intros xs ys. unfold leaf_counts, l1, cR. induction (leaves t) as [|b bs IH]; simpl; [lra|].
    rewrite IH, <- !INR_IZR_INZ. unfold Rdiv. ring. }
  rewrite !H.
  assert (Hl : l1 Rec (leaves t) (leaf_of t) (x :: l) l <= 1).
  { pose proof (l1_decomp Rec (leaves t) (leaf_of t) (x :: l) l l [x] [] (leaves_nodup t)) as Hd.
    simpl in Hd. rewrite app_nil_r in Hd. specialize (Hd (Permutation_cons_append l x) (Permutation_refl l)). lra. }
  assert (Hl' : l1 Rec (leaves t) (leaf_of t) l (x :: l) <= 1).
  { pose proof (l1_decomp Rec (leaves t) (leaf_of t) l (x :: l) l [] [x] (leaves_nodup t)) as Hd.
    simpl in Hd. rewrite app_nil_r in Hd. specialize (Hd (Permutation_refl l) (Permutation_cons_append l x)). lra. }
  assert (0 < / sc) by (apply Rinv_0_lt_compat, sc_pos). split; nra.
Qed.

Lemma privtree_add_one x l :
  pw_close (3 / lam + / sc) (privtree_release (x :: l)) (privtree_release l) /\
  pw_close (3 / lam + / sc) (privtree_release l) (privtree_release (x :: l)).
Proof.
  assert (Hpos : forall t, Forall (fun s => 0 < s) (repeat sc (length (leaves t)))).
  { intros t. apply Forall_forall. intros s Hs. apply repeat_spec in Hs. subst. exact sc_pos. }
  assert (Hlen : forall t zs, length (leaf_counts t zs) = length (repeat sc (length (leaves t)))).
  { intros. unfold leaf_counts. rewrite map_length, repeat_length. reflexivity. }
  split; intros [t y]; unfold privtree_release; simpl; rewrite exp_plus;
    destruct (privtree_structure_dp lam delta theta depth x l t lam_pos bias) as [S1 S2];
    destruct (leaf_counts_one t x l) as [L1 L2].
  - pose proof (vector_laplace _ (leaf_counts t (x :: l)) (leaf_counts t l) y (Hpos t) (Hlen _ _) (Hlen _ _)) as V.
    assert (V' : vec_pmf (repeat sc (length (leaves t))) (leaf_counts t (x :: l)) y <=
                 exp (/ sc) * vec_pmf (repeat sc (length (leaves t))) (leaf_counts t l) y).
    { eapply Rle_trans; [exact V|]. apply Rmult_le_compat_r; [apply vec_pmf_nonneg, Hpos|apply exp_le_mono, L1]. }
    pose proof (privtree_law_nonneg lam delta theta depth (x :: l) t). pose proof (privtree_law_nonneg lam delta theta depth l t).
    pose proof (vec_pmf_nonneg _ (leaf_counts t (x :: l)) y (Hpos t)). pose proof (vec_pmf_nonneg _ (leaf_counts t l) y (Hpos t)).
    pose proof (exp_pos (3 / lam)). pose proof (exp_pos (/ sc)).
    apply Rle_trans with (exp (3 / lam) * privtree_law lam delta theta depth l t * vec_pmf (repeat sc (length (leaves t))) (leaf_counts t (x :: l)) y).
    + apply Rmult_le_compat_r; auto.
    + replace (exp (3 / lam) * exp (/ sc) * (privtree_law lam delta theta depth l t * vec_pmf (repeat sc (length (leaves t))) (leaf_counts t l) y))
        with (exp (3 / lam) * privtree_law lam delta theta depth l t * (exp (/ sc) * vec_pmf (repeat sc (length (leaves t))) (leaf_counts t l) y)) by ring.
      apply Rmult_le_compat_l; [nra|exact V'].
  - pose proof (vector_laplace _ (leaf_counts t l) (leaf_counts t (x :: l)) y (Hpos t) (Hlen _ _) (Hlen _ _)) as V.
    assert (V' : vec_pmf (repeat sc (length (leaves t))) (leaf_counts t l) y <=
                 exp (/ sc) * vec_pmf (repeat sc (length (leaves t))) (leaf_counts t (x :: l)) y).
    { eapply Rle_trans; [exact V|]. apply Rmult_le_compat_r; [apply vec_pmf_nonneg, Hpos|apply exp_le_mono, L2]. }
    pose proof (privtree_law_nonneg lam delta theta depth (x :: l) t). pose proof (privtree_law_nonneg lam delta theta depth l t).
    pose proof (vec_pmf_nonneg _ (leaf_counts t (x :: l)) y (Hpos t)). pose proof (vec_pmf_nonneg _ (leaf_counts t l) y (Hpos t)).
    pose proof (exp_pos (3 / lam)). pose proof (exp_pos (/ sc)).
    apply Rle_trans with (exp (3 / lam) * privtree_law lam delta theta depth (x :: l) t * vec_pmf (repeat sc (length (leaves t))) (leaf_counts t l) y).
    + apply Rmult_le_compat_r; auto.
    + replace (exp (3 / lam) * exp (/ sc) * (privtree_law lam delta theta depth (x :: l) t * vec_pmf (repeat sc (length (leaves t))) (leaf_counts t (x :: l)) y))
        with (exp (3 / lam) * privtree_law lam delta theta depth (x :: l) t * (exp (/ sc) * vec_pmf (repeat sc (length (leaves t))) (leaf_counts t (x :: l)) y)) by ring.
      apply Rmult_le_compat_l; [nra|exact V'].
Qed.

Lemma privtree_release_perm l1 l2 ty : Permutation l1 l2 -> privtree_release l1 ty = privtree_release l2 ty.
Proof.
  intros H. unfold privtree_release. rewrite (privtree_law_perm lam delta theta depth l1 l2 H).
  unfold leaf_counts. f_equal. f_equal. apply map_ext. intros b. rewrite (count_perm Rec (leaf_of (fst ty)) l1 l2 b H). reflexivity.
Qed.

(** The map of docs/proofs/privtree.rst: [f * u * (3/lambda + 1/sigma_c)]. *)
Theorem privtree_dp k n d xs ys :
  close k n d xs ys ->
  pw_close ((if sized n then 2 else 1) * units k n d * (3 / lam + / sc)) (privtree_release xs) (privtree_release ys).
Proof.
  intros Hc. apply (group_privacy_close Rec (PTree * list Z) privtree_release).
  - intros l [t y]. unfold privtree_release. apply Rmult_le_pos; [apply privtree_law_nonneg|].
    apply vec_pmf_nonneg. apply Forall_forall. intros s Hs. apply repeat_spec in Hs. subst. exact sc_pos.
  - intros l1 l2 o H. apply privtree_release_perm, H.
  - assert (0 < 3 / lam) by (unfold Rdiv; apply Rmult_lt_0_compat; [lra|apply Rinv_0_lt_compat, lam_pos]).
    assert (0 < / sc) by (apply Rinv_0_lt_compat, sc_pos). lra.
  - apply privtree_add_one.
  - exact Hc.
Qed.
End PrivTree.

(** ---- docs/proofs/nn_histogram.rst: project, count per candidate, LapZ noise ---- *)
Theorem nn_histogram_dp {A} k n d (proj : A -> nat) (cands : list nat) (scale : R) xs ys :
  NoDup cands -> 0 < scale -> close k n d xs ys ->
  pw_close (2 * rep k d * / scale)
    (vec_pmf (scale_vec A false 0 [{| Laplace.scale := scale; ncell := proj; ncells := cands |}])
             (count_vec A false [{| Laplace.scale := scale; ncell := proj; ncells := cands |}] xs))
    (vec_pmf (scale_vec A false 0 [{| Laplace.scale := scale; ncell := proj; ncells := cands |}])
             (count_vec A false [{| Laplace.scale := scale; ncell := proj; ncells := cands |}] ys)).
Proof.
  intros Hnd Hs Hc.
  assert (Hl : forall L, In L [{| Laplace.scale := scale; ncell := proj; ncells := cands |}] -> NoDup (ncells A L)).
  { intros L [<-|[]]. exact Hnd. }
  pose proof (tree_laplace_dp A k n d false 0 [{| Laplace.scale := scale; ncell := proj; ncells := cands |}] xs ys
                ltac:(discriminate) ltac:(constructor; [exact Hs|constructor]) Hl Hc) as H.
  eapply pw_close_mono; [| |exact H].
  - simpl. destruct (root_charged k n); lra.
  - intros y. apply vec_pmf_nonneg. unfold scale_vec. simpl. rewrite app_nil_r.
    apply Forall_forall. intros s Hin. apply repeat_spec in Hin. subst. exact Hs.
Qed.

(** ---- docs/proofs/zcdp_schedules.rst: the dyadic zCDP schedule spends [rho] exactly in real
    arithmetic: [sigma_{j+1} = sqrt(S / rho) q^{-j}], [S = sum_{j < r} q^{2j}]. *)
Definition zsched (rho q : R) (r : nat) (j : nat) : R :=
  sqrt (sumR (seq 0 r) (fun i => q ^ (2 * i)) / rho) * / q ^ j.

Theorem zcdp_schedule_budget rho q r :
  0 < rho -> 0 < q -> (0 < r)%nat ->
  sumR (seq 0 r) (fun j => / (zsched rho q r j) ^ 2) = rho.
Proof.
  intros Hr Hq Hn. set (S := sumR (seq 0 r) (fun i => q ^ (2 * i))).
  assert (HS : 0 < S).
  { unfold S. destruct r as [|r']; [lia|]. cbn [seq sumR]. rewrite Nat.mul_0_r, pow_O.
    pose proof (sumR_nonneg (seq 1 r') (fun i => q ^ (2 * i)) (fun i _ => pow_le q _ (Rlt_le _ _ Hq))). lra. }
  assert (Hsq : sqrt (S / rho) ^ 2 = S / rho).
  { simpl. rewrite Rmult_1_r. apply sqrt_sqrt. unfold Rdiv. apply Rmult_le_pos; [lra|left; apply Rinv_0_lt_compat, Hr]. }
  rewrite (sumR_ext _ _ (fun j => rho / S * q ^ (2 * j))).
  - rewrite sumR_scal. fold S. field. lra.
  - intros j _. unfold zsched. fold S. rewrite Rpow_mult_distr, Hsq.
    assert (0 < q ^ j) by (apply pow_lt, Hq).
    rewrite pow_mult.
    replace ((q ^ 2) ^ j) with ((q ^ j) ^ 2) by (rewrite <- !pow_mult, Nat.mul_comm; reflexivity).
    field. lra.
Qed.
