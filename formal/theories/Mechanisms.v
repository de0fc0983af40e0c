(** The composite measurements: the exponential selection's calibration, the noisy size,
    Adaptive Pruned-PMM, PrivTree, Tree-EM, the NN histogram, the zCDP schedule. *)
From Coq Require Import Reals Lra Lia List ZArith Permutation.
From OWFormal Require Import Sums Neighbours Hist DP Laplace Expo Vec.
Import ListNotations.
Open Scope R_scope.

(** ---- docs/proofs/exponential_selection.rst: [beta >= 2 Delta / eps] gives [map(Delta) <= eps] *)
Theorem selection_calibration (D eps beta : R) :
  0 < D -> 0 < eps -> 2 * D / eps <= beta -> 2 * D / beta <= eps.
Proof.
  intros HD He Hb. assert (0 < 2 * D / eps) by (unfold Rdiv; apply Rmult_lt_0_compat; [lra|apply Rinv_0_lt_compat; lra]).
  apply Rmult_le_reg_r with beta; [lra|]. unfold Rdiv. rewrite Rmult_assoc, Rinv_l by lra.
  apply Rmult_le_reg_r with (/ eps); [apply Rinv_0_lt_compat; lra|].
  replace (eps * beta * / eps) with beta by (field; lra). unfold Rdiv in Hb. lra.
Qed.

(** ---- docs/proofs/noisy_size.rst: the noisy count, then [build(max(1, n + Z))] ---- *)
Section NoisySize.
Variable A O : Type.
Variable scale : R.
Hypothesis scale_pos : 0 < scale.
(** [build k]: the mechanism built from the public [k]; [bound] bounds every one of them. *)
Variable build : Z -> list A -> O -> R.
Variable bound : R.
Hypothesis build_nonneg : forall k xs o, 0 <= build k xs o.

Definition noisy_size_law (xs : list A) (zo : Z * O) : R :=
  lapz scale (fst zo - Z.of_nat (length xs)) * build (Z.max 1 (fst zo)) xs (snd zo).

Theorem noisy_size_dp d xs ys :
  close Sym None d xs ys -> (forall k, pw_close bound (build k xs) (build k ys)) ->
  pw_close (INR d / scale + bound) (noisy_size_law xs) (noisy_size_law ys).
Proof.
  intros Hc Hb [z o]. unfold noisy_size_law. simpl.
  pose proof (row_count_stability A d xs ys Hc) as Hr. rewrite !INR_IZR_INZ in Hr.
  assert (H1 : lapz scale (z - Z.of_nat (length xs)) <= exp (INR d / scale) * lapz scale (z - Z.of_nat (length ys))).
  { eapply Rle_trans; [apply lapz_ratio, scale_pos|]. apply Rmult_le_compat_r; [left; apply lapz_pos, scale_pos|].
    apply exp_le_mono. unfold Rdiv. apply Rmult_le_compat_r; [left; apply Rinv_0_lt_compat, scale_pos|].
    rewrite INR_IZR_INZ. exact Hr. }
  rewrite exp_plus. pose proof (Hb (Z.max 1 z) o). pose proof (build_nonneg (Z.max 1 z) xs o).
  pose proof (lapz_pos scale (z - Z.of_nat (length ys)) scale_pos). pose proof (exp_pos (INR d / scale)).
  pose proof (exp_pos bound). pose proof (build_nonneg (Z.max 1 z) ys o).
  apply Rle_trans with (exp (INR d / scale) * lapz scale (z - Z.of_nat (length ys)) * build (Z.max 1 z) xs o).
  - apply Rmult_le_compat_r; auto.
  - replace (exp (INR d / scale) * exp bound * (lapz scale (z - Z.of_nat (length ys)) * build (Z.max 1 z) ys o))
      with (exp (INR d / scale) * lapz scale (z - Z.of_nat (length ys)) * (exp bound * build (Z.max 1 z) ys o)) by ring.
    apply Rmult_le_compat_l; [nra|auto].
Qed.
End NoisySize.

(** ---- docs/proofs/adaptive_pruned_pmm.rst: select a candidate on the scores, then run it ---- *)
Section Adaptive.
Variable C O : Type.
Variable cands : list C.
Hypothesis cands_ne : cands <> [].
Variable beta : R.
Hypothesis beta_pos : 0 < beta.

Theorem adaptive_dp (u u' : C -> R) (SD : R) (P Q : C -> O -> R) (main : R) :
  (forall a, Rabs (u a - u' a) <= SD) ->
  (forall a o, 0 <= P a o) -> (forall a, pw_close main (P a) (Q a)) ->
  pw_close (2 * SD / beta + main)
    (fun ao => em C cands beta u (fst ao) * P (fst ao) (snd ao))
    (fun ao => em C cands beta u' (fst ao) * Q (fst ao) (snd ao)).
Proof.
  intros Hu HP HQ. apply composition; auto.
  - intros a. unfold em. apply Rmult_le_pos; [left; apply exp_pos|left; apply Rinv_0_lt_compat, sum_exp_pos, cands_ne].
  - apply exponential_selection_dp; auto.
Qed.

(** The budget split: with [beta >= 2 Delta / eps'] and [eps' <= T - U / c], one unit costs at
    most [T]: [c = 1] (a replacement: [rep = 1]) or [c = 2] (a record: [rep = 1/2]). *)
Theorem adaptive_budget (D U T eps' beta' cdiv : R) :
  0 < D -> 0 < eps' -> 2 * D / eps' <= beta' -> eps' <= T - U / cdiv -> 0 < cdiv ->
  2 * D / beta' + U / cdiv <= T.
Proof. intros HD He Hb Hs Hc. pose proof (selection_calibration D eps' beta' HD He Hb). lra. Qed.
End Adaptive.

(** ---- docs/proofs/tree_em.rst: the exponential mechanism on multisets of candidates ---- *)
Section TreeEM.
Variable anc : nat -> list nat.
Variable nodes : list nat.
Variable w : nat -> R.              (* edge weights *)
Hypothesis w_nonneg : forall v, 0 <= w v.
Variable nrec mout : R.             (* n (public) and m *)
Hypothesis n_pos : 0 < nrec.
Hypothesis m_pos : 0 < mout.

(** [u_A(S) = - sum_v w_v |A_v / n - c_v / m|]. *)
Definition tem_utility (xs : list nat) (S : nat -> R) : R :=
  - sumR nodes (fun v => w v * Rabs (F nat nat (anc_ind anc) xs v / nrec - S v / mout)).

Lemma tem_utility_sensitivity xs ys S :
  Rabs (tem_utility xs S - tem_utility ys S) <= nl1 nat nodes w (fun v => F nat nat (anc_ind anc) xs v - F nat nat (anc_ind anc) ys v) / nrec.
Proof.
  unfold tem_utility, nl1.
  replace (- sumR nodes (fun v => w v * Rabs (F nat nat (anc_ind anc) xs v / nrec - S v / mout)) -
           - sumR nodes (fun v => w v * Rabs (F nat nat (anc_ind anc) ys v / nrec - S v / mout)))
    with (sumR nodes (fun v => w v * Rabs (F nat nat (anc_ind anc) ys v / nrec - S v / mout) -
                               w v * Rabs (F nat nat (anc_ind anc) xs v / nrec - S v / mout))) by (rewrite sumR_minus; ring).
  eapply Rle_trans; [apply sumR_abs|].
  match goal with |- _ <= ?S / nrec => replace (S / nrec) with (/ nrec * S) by (unfold Rdiv; ring) end.
  rewrite <- sumR_scal.
  apply sumR_le. intros v _.
  set (a := F nat nat (anc_ind anc) xs v). set (b := F nat nat (anc_ind anc) ys v).
  rewrite <- Rmult_minus_distr_l, Rabs_mult, (Rabs_pos_eq (w v)) by apply w_nonneg.
  replace (/ nrec * (w v * Rabs (a - b))) with (w v * (Rabs (a - b) / nrec)) by (unfold Rdiv; ring).
  apply Rmult_le_compat_l; [apply w_nonneg|].
  replace (Rabs (a - b) / nrec) with (Rabs (a / nrec - b / nrec)).
  2:{ replace (a / nrec - b / nrec) with ((a - b) * / nrec) by (unfold Rdiv; ring).
      rewrite Rabs_mult, (Rabs_pos_eq (/ nrec)) by (left; apply Rinv_0_lt_compat, n_pos). reflexivity. }
  pose proof (Rabs_triang_inv (b / nrec - S v / mout) (a / nrec - S v / mout)).
  pose proof (Rabs_triang_inv (a / nrec - S v / mout) (b / nrec - S v / mout)).
  replace (b / nrec - S v / mout - (a / nrec - S v / mout)) with (- (a / nrec - b / nrec)) in H by ring.
  replace (a / nrec - S v / mout - (b / nrec - S v / mout)) with (a / nrec - b / nrec) in H0 by ring.
  rewrite Rabs_Ropp in H. unfold Rabs at 1. destruct Rcase_abs; lra.
Qed.

(** [alpha = eps / (2 Delta)], [Delta = diam / n]: the law [∝ exp(alpha u_A(S))] over any
    finite set of multisets is [eps * m]-close for [m] replacements, [m <= rep]. *)
Theorem tree_em_dp k mm d (outcomes : list (nat -> R)) (diam eps : R) xs ys :
  outcomes <> [] -> 0 < diam -> 0 < eps ->
  (forall p q, nl1 nat nodes w (fun v => anc_ind anc p v - anc_ind anc q v) <= diam) ->
  close k (Some mm) d xs ys ->
  pw_close (eps * rep k d)
    (em (nat -> R) outcomes (2 * (diam / nrec) / eps) (fun S => - tem_utility xs S))
    (em (nat -> R) outcomes (2 * (diam / nrec) / eps) (fun S => - tem_utility ys S)).
Proof.
  intros Hne Hd He Hp Hc.
  assert (Hbeta : 0 < 2 * (diam / nrec) / eps).
  { unfold Rdiv. repeat apply Rmult_lt_0_compat; try lra; apply Rinv_0_lt_compat; lra. }
  assert (HD0 : forall p, nl1 nat nodes w (anc_ind anc p) <= sumR nodes w).
  { intros p. unfold nl1. apply sumR_le. intros v _. unfold anc_ind.
    pose proof (w_nonneg v). destruct in_dec; [rewrite Rabs_R1|rewrite Rabs_R0]; lra. }
  assert (HS0 : 0 <= sumR nodes w) by (apply sumR_nonneg; intros; apply w_nonneg).
  pose proof (vec_l1_stability nat nat (anc_ind anc) nodes w w_nonneg k (Some mm) d xs ys diam (sumR nodes w)
                 ltac:(lra) HS0 Hp HD0 Hc) as Hv.
  simpl in Hv.
  assert (Hw : INR (whole k (Some mm) d) <= rep k d).
  { destruct k; simpl; [|lra]. pose proof (Nat.div_mod d 2 ltac:(lia)). pose proof (Nat.mod_upper_bound d 2 ltac:(lia)).
    assert (INR (2 * Nat.div d 2) <= INR d) by (apply le_INR; lia). rewrite mult_INR in H1. simpl in H1. lra. }
  assert (Hwpos : 0 <= INR (whole k (Some mm) d)) by apply pos_INR.
  eapply pw_close_mono; [| |apply exponential_selection_dp with (D := INR (whole k (Some mm) d) * (diam / nrec)); auto].
  - replace (2 * (INR (whole k (Some mm) d) * (diam / nrec)) / (2 * (diam / nrec) / eps)) with (eps * INR (whole k (Some mm) d)).
    + apply Rmult_le_compat_l; lra.
    + field. split; lra.
  - intros S. unfold em. apply Rmult_le_pos; [left; apply exp_pos|left; apply Rinv_0_lt_compat, sum_exp_pos, Hne].
  - intros S.
    replace (- tem_utility xs S - - tem_utility ys S) with (- (tem_utility xs S - tem_utility ys S)) by ring.
    rewrite Rabs_Ropp.
    eapply Rle_trans; [apply tem_utility_sensitivity|].
    unfold Rdiv. rewrite <- Rmult_assoc. apply Rmult_le_compat_r; [left; apply Rinv_0_lt_compat, n_pos|exact Hv].
Qed.
End TreeEM.
