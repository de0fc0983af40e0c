(** The discrete Laplace mechanism on hierarchical counts (docs/proofs/tree_laplace.rst,
    pmm.rst, tree_projection.rst, noisy_size.rst, privtree.rst, nn_histogram.rst): Lemma 1
    (vector discrete Laplace) and the chain with the count transformations. *)
From Coq Require Import Reals Lra Lia List ZArith.
From OWFormal Require Import Sums Neighbours Hist DP.
Import ListNotations.
Open Scope R_scope.

(** [LapZ(s)]: [Pr(z) = (1 - q)/(1 + q) q^|z|], [q = e^{-1/s}]. *)
Definition lapz (s : R) (z : Z) : R :=
  (1 - exp (- / s)) / (1 + exp (- / s)) * exp (- Rabs (IZR z) / s).

Lemma lapz_pos s z : 0 < s -> 0 < lapz s z.
Proof.
  intros Hs. unfold lapz.
  assert (exp (- / s) < 1).
  { rewrite <- exp_0. apply exp_increasing. assert (0 < / s) by (apply Rinv_0_lt_compat, Hs). lra. }
  assert (0 < exp (- / s)) by apply exp_pos.
  apply Rmult_lt_0_compat; [|apply exp_pos].
  unfold Rdiv. apply Rmult_lt_0_compat; [lra|apply Rinv_0_lt_compat; lra].
Qed.

(** One coordinate: [Pr(u + Z = y) <= e^{|u - v|/s} Pr(v + Z = y)]. *)
Lemma lapz_ratio s (y u v : Z) :
  0 < s -> lapz s (y - u) <= exp (Rabs (IZR u - IZR v) / s) * lapz s (y - v).
Proof.
  intros Hs. unfold lapz.
  set (C := (1 - exp (- / s)) / (1 + exp (- / s))).
  assert (HC : 0 <= C).
  { pose proof (lapz_pos s 0 Hs) as H. unfold lapz in H. fold C in H.
    pose proof (exp_pos (- Rabs (IZR 0) / s)). nra. }
  rewrite <- Rmult_assoc, (Rmult_comm (exp _) C), Rmult_assoc.
  apply Rmult_le_compat_l; [exact HC|].
  rewrite <- exp_plus. apply exp_le_mono.
  rewrite !minus_IZR.
  assert (Rabs (IZR y - IZR v) <= Rabs (IZR y - IZR u) + Rabs (IZR u - IZR v)).
  { replace (IZR y - IZR v) with ((IZR y - IZR u) + (IZR u - IZR v)) by ring. apply Rabs_triang. }
  unfold Rdiv. assert (0 < / s) by (apply Rinv_0_lt_compat, Hs). nra.
Qed.

(** Vectors of noisy counts: independent coordinates. *)
Fixpoint vec_pmf (ss : list R) (u y : list Z) : R :=
  match ss, u, y with
  | s :: ss', a :: u', b :: y' => lapz s (b - a) * vec_pmf ss' u' y'
  | _, _, _ => 1
  end.

Fixpoint wl1 (ss : list R) (u v : list Z) : R :=
  match ss, u, v with
  | s :: ss', a :: u', b :: v' => Rabs (IZR a - IZR b) / s + wl1 ss' u' v'
  | _, _, _ => 0
  end.

Lemma vec_pmf_nonneg ss u y : Forall (fun s => 0 < s) ss -> 0 <= vec_pmf ss u y.
Proof.
  revert u y. induction ss as [|s ss IH]; intros u y H; simpl; [lra|].
  destruct u, y; try lra. inversion H; subst.
  apply Rmult_le_pos; [left; apply lapz_pos; auto|apply IH; auto].
Qed.

Lemma wl1_nonneg ss u v : Forall (fun s => 0 < s) ss -> 0 <= wl1 ss u v.
Proof.
  revert u v. induction ss as [|s ss IH]; intros u v H; simpl; [lra|].
  destruct u, v; try lra. inversion H; subst.
  pose proof (IH u v H3). pose proof (Rabs_pos (IZR z - IZR z0)).
  assert (0 <= Rabs (IZR z - IZR z0) / s) by (unfold Rdiv; apply Rmult_le_pos; [lra|left; apply Rinv_0_lt_compat; auto]).
  lra.
Qed.

(** Lemma 1 of docs/proofs/tree_laplace.rst (Lemma A.3 of Zare Moayedi et al. 2026). *)
Theorem vector_laplace ss u v y :
  Forall (fun s => 0 < s) ss -> length u = length ss -> length v = length ss ->
  vec_pmf ss u y <= exp (wl1 ss u v) * vec_pmf ss v y.
Proof.
  revert u v y. induction ss as [|s ss IH]; intros u v y H Hu Hv; simpl.
  - rewrite exp_0. lra.
  - destruct u as [|a u]; [discriminate|]. destruct v as [|b v]; [discriminate|].
    simpl in Hu, Hv. injection Hu as Hu. injection Hv as Hv.
    destruct y as [|c y].
    { rewrite Rmult_1_r. rewrite <- exp_0 at 1. apply exp_le_mono. exact (wl1_nonneg (s :: ss) (a :: u) (b :: v) H). }
    simpl. inversion H; subst. rewrite exp_plus.
    pose proof (lapz_ratio s c a b ltac:(auto)). pose proof (IH u v y ltac:(auto) Hu Hv).
    pose proof (lapz_pos s (c - a) ltac:(auto)). pose proof (vec_pmf_nonneg ss u y ltac:(auto)).
    pose proof (vec_pmf_nonneg ss v y ltac:(auto)). pose proof (exp_pos (Rabs (IZR a - IZR b) / s)).
    pose proof (exp_pos (wl1 ss u v)).
    apply Rle_trans with (exp (Rabs (IZR a - IZR b) / s) * lapz s (c - b) * vec_pmf ss u y).
    + apply Rmult_le_compat_r; auto.
    + replace (exp (Rabs (IZR a - IZR b) / s) * exp (wl1 ss u v) * (lapz s (c - b) * vec_pmf ss v y))
        with (exp (Rabs (IZR a - IZR b) / s) * lapz s (c - b) * (exp (wl1 ss u v) * vec_pmf ss v y)) by ring.
      apply Rmult_le_compat_l; [pose proof (lapz_pos s (c - b) ltac:(auto)); nra|auto].
Qed.

(** ---- the noisy hierarchical counts ---- *)
Section Tree.
Variable A : Type.

(** A noised level: its scale [s_j], its cell map and its cells. *)
Record nlevel := { scale : R; ncell : A -> nat; ncells : list nat }.

Definition as_level (L : nlevel) : level A := {| weight := / scale L; cell := ncell L; cells := ncells L |}.

Definition level_vec (L : nlevel) (xs : list A) : list Z :=
  map (fun b => Z.of_nat (count A (ncell L) xs b)) (ncells L).

(** [F(x)] restricted to the released nodes [Theta']: the root when [release_root], then every
    node of every level. *)
Definition count_vec (release_root : bool) (levels : list nlevel) (xs : list A) : list Z :=
  (if release_root then [Z.of_nat (length xs)] else []) ++ flat_map (fun L => level_vec L xs) levels.

Definition scale_vec (release_root : bool) (s0 : R) (levels : list nlevel) : list R :=
  (if release_root then [s0] else []) ++ flat_map (fun L => repeat (scale L) (length (ncells L))) levels.

Lemma wl1_app s1 s2 u1 u2 v1 v2 :
  length s1 = length u1 -> length s1 = length v1 ->
  wl1 (s1 ++ s2) (u1 ++ u2) (v1 ++ v2) = wl1 s1 u1 v1 + wl1 s2 u2 v2.
Proof.
  revert u1 v1. induction s1 as [|s s1 IH]; intros u1 v1 H1 H2.
  - destruct u1, v1; try discriminate. simpl. lra.
  - destruct u1 as [|a u1], v1 as [|b v1]; try discriminate. simpl. rewrite IH by (simpl in *; lia). lra.
Qed.

Lemma wl1_level L xs ys : 0 < scale L ->
  wl1 (repeat (scale L) (length (ncells L))) (level_vec L xs) (level_vec L ys)
  = / scale L * l1 A (ncells L) (ncell L) xs ys.
Proof.
  intros Hs. unfold level_vec, l1, cR. induction (ncells L) as [|b bs IH]; simpl.
  - lra.
  - rewrite IH, <- !INR_IZR_INZ. unfold Rdiv. ring.
Qed.

Lemma flat_map_length_vec levels xs :
  length (flat_map (fun L => repeat (scale L) (length (ncells L))) levels) =
  length (flat_map (fun L => level_vec L xs) levels).
Proof.
  induction levels as [|L t IH]; simpl; [reflexivity|].
  rewrite !app_length, repeat_length, IH. unfold level_vec. rewrite map_length. reflexivity.
Qed.

Lemma wl1_levels levels xs ys :
  Forall (fun L => 0 < scale L) levels ->
  wl1 (flat_map (fun L => repeat (scale L) (length (ncells L))) levels)
      (flat_map (fun L => level_vec L xs) levels) (flat_map (fun L => level_vec L ys) levels)
  = sumR levels (fun L => / scale L * l1 A (ncells L) (ncell L) xs ys).
Proof.
  induction levels as [|L t IH]; intros H; simpl; [reflexivity|].
  inversion H; subst.
  rewrite wl1_app; [|rewrite repeat_length; unfold level_vec; rewrite map_length; reflexivity
                   |rewrite repeat_length; unfold level_vec; rewrite map_length; reflexivity].
  rewrite wl1_level, IH; auto.
Qed.

(** The released noisy tree is [d]-close for [d] the hierarchical l1 distance. *)
Lemma count_vec_wl1 rr s0 levels xs ys :
  (rr = true -> 0 < s0) -> Forall (fun L => 0 < scale L) levels ->
  wl1 (scale_vec rr s0 levels) (count_vec rr levels xs) (count_vec rr levels ys)
  = hier_l1 A (if rr then / s0 else 0) (map as_level levels) xs ys.
Proof.
  intros H0 H. unfold scale_vec, count_vec, hier_l1.
  rewrite sumR_map. simpl.
  destruct rr.
  - simpl. rewrite wl1_levels by exact H. rewrite <- !INR_IZR_INZ. unfold Rdiv. ring.
  - simpl. rewrite wl1_levels by exact H. ring.
Qed.

(** The count transformation chained with the noise: [make_dyadic_counts >> make_tree_laplace]
    (pmm.rst, tree_laplace.rst) and [make_tree_counts >> make_tree_count_laplace]
    (tree_projection.rst).  The exponent is the stability map's exact value. *)
Theorem tree_laplace_dp k n d rr s0 levels xs ys :
  (rr = true -> 0 < s0) -> Forall (fun L => 0 < scale L) levels ->
  (forall L, In L levels -> NoDup (ncells L)) -> close k n d xs ys ->
  pw_close (2 * rep k d * (sumR levels (fun L => / scale L) +
                           (if root_charged k n then (if rr then / s0 else 0) else 0)))
           (vec_pmf (scale_vec rr s0 levels) (count_vec rr levels xs))
           (vec_pmf (scale_vec rr s0 levels) (count_vec rr levels ys)).
Proof.
  intros H0 H HN Hc y.
  assert (Hpos : Forall (fun s => 0 < s) (scale_vec rr s0 levels)).
  { unfold scale_vec. apply Forall_app. split.
    - destruct rr; [constructor; [apply H0; reflexivity|constructor]|constructor].
    - apply Forall_forall. intros s Hs. apply in_flat_map in Hs. destruct Hs as (L & HL & Hs).
      apply repeat_spec in Hs. subst. rewrite Forall_forall in H. apply H, HL. }
  assert (Hlen : forall zs, length (count_vec rr levels zs) = length (scale_vec rr s0 levels)).
  { intros zs. unfold count_vec, scale_vec. rewrite !app_length, (flat_map_length_vec levels zs).
    destruct rr; reflexivity. }
  eapply Rle_trans; [apply vector_laplace; [exact Hpos|apply Hlen|apply Hlen]|].
  apply Rmult_le_compat_r; [apply vec_pmf_nonneg, Hpos|].
  apply exp_le_mono.
  rewrite (count_vec_wl1 rr s0 levels xs ys H0 H).
  replace (sumR levels (fun L => / scale L)) with (sumR (map as_level levels) (weight A)) by (rewrite sumR_map; reflexivity).
  apply hier_l1_stability.
  - destruct rr; [left; apply Rinv_0_lt_compat, H0; reflexivity|lra].
  - intros L HL. apply in_map_iff in HL. destruct HL as (L' & <- & HL'). split.
    + left. apply Rinv_0_lt_compat. rewrite Forall_forall in H. apply H, HL'.
    + apply HN, HL'.
  - exact Hc.
Qed.

(** The pruned traversal is a function of the complete noisy tree and independent coins
    (the claim of tree_laplace.rst), so every event of its release obeys the same bound. *)
Theorem pruned_tree_laplace_dp {K Out} k n d rr s0 levels xs ys (C : K -> R)
    (g : list Z * K -> Out) (enum : nat -> list Z * K) (E : Out -> bool) lp lq :
  (rr = true -> 0 < s0) -> Forall (fun L => 0 < scale L) levels ->
  (forall L, In L levels -> NoDup (ncells L)) -> close k n d xs ys -> (forall c, 0 <= C c) ->
  infinite_sum (restrict (fun yc => E (g yc))
     (fun yc => vec_pmf (scale_vec rr s0 levels) (count_vec rr levels xs) (fst yc) * C (snd yc)) enum) lp ->
  infinite_sum (restrict (fun yc => E (g yc))
     (fun yc => vec_pmf (scale_vec rr s0 levels) (count_vec rr levels ys) (fst yc) * C (snd yc)) enum) lq ->
  lp <= exp (2 * rep k d * (sumR levels (fun L => / scale L) +
                           (if root_charged k n then (if rr then / s0 else 0) else 0))) * lq.
Proof.
  intros H0 H HN Hc HC Hp Hq.
  eapply postprocessing; [exact HC| |exact Hp|exact Hq].
  apply tree_laplace_dp; auto.
Qed.
End Tree.
