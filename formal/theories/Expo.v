(** The exponential mechanism (docs/proofs/exponential_selection.rst, tree_em.rst,
    adaptive_pruned_pmm.rst): [Pr(a) ∝ exp(-u_a / beta)] over a finite non-empty set; scores
    [Delta]-close in sup norm give [Pr(a) <= exp(2 Delta / beta) Pr'(a)]. *)
From Coq Require Import Reals Lra List.
From OWFormal Require Import Sums DP.
Import ListNotations.
Open Scope R_scope.

Section Expo.
Variable C : Type.

Definition em (cs : list C) (beta : R) (u : C -> R) (a : C) : R :=
  exp (- u a / beta) / sumR cs (fun b => exp (- u b / beta)).

Lemma sum_exp_pos (cs : list C) beta u : cs <> [] -> 0 < sumR cs (fun b => exp (- u b / beta)).
Proof.
  destruct cs as [|c cs]; [congruence|]. intros _. simpl.
  pose proof (exp_pos (- u c / beta)).
  pose proof (sumR_nonneg cs (fun b => exp (- u b / beta)) (fun b _ => Rlt_le _ _ (exp_pos _))). lra.
Qed.

Lemma exp_shift (x y D beta : R) : 0 < beta -> Rabs (x - y) <= D ->
  exp (- x / beta) <= exp (D / beta) * exp (- y / beta).
Proof.
  intros Hb H. rewrite <- exp_plus. apply exp_le_mono. unfold Rdiv.
  assert (0 < / beta) by (apply Rinv_0_lt_compat, Hb).
  assert (y - x <= D) by (unfold Rabs in H; destruct Rcase_abs; lra). nra.
Qed.

Theorem em_ratio (cs : list C) beta (u u' : C -> R) (D : R) (a : C) :
  cs <> [] -> 0 < beta ->
  (forall b, In b cs -> Rabs (u b - u' b) <= D) -> Rabs (u a - u' a) <= D ->
  em cs beta u a <= exp (2 * D / beta) * em cs beta u' a.
Proof.
  intros Hne Hb Hall Ha. unfold em.
  pose proof (sum_exp_pos cs beta u Hne) as Su. pose proof (sum_exp_pos cs beta u' Hne) as Su'.
  assert (Hnum : exp (- u a / beta) <= exp (D / beta) * exp (- u' a / beta)) by (apply exp_shift; auto).
  assert (Hden : sumR cs (fun b => exp (- u' b / beta)) <= exp (D / beta) * sumR cs (fun b => exp (- u b / beta))).
  { rewrite <- sumR_scal. apply sumR_le. intros b Hin. apply exp_shift; auto.
    rewrite Rabs_minus_sym. apply Hall, Hin. }
  replace (2 * D / beta) with (D / beta + D / beta) by (unfold Rdiv; ring). rewrite exp_plus.
  set (N := exp (- u a / beta)) in *. set (N' := exp (- u' a / beta)) in *.
  set (S := sumR cs (fun b => exp (- u b / beta))) in *. set (S' := sumR cs (fun b => exp (- u' b / beta))) in *.
  set (E := exp (D / beta)) in *.
  assert (HE : 0 < E) by apply exp_pos. assert (HN' : 0 < N') by apply exp_pos.
  assert (Hinv : / S <= E * / S').
  { assert (0 <= E * / S' - / S).
    { replace (E * / S' - / S) with ((E * S - S') / (S * S')) by (field; lra).
      unfold Rdiv. apply Rmult_le_pos; [lra|left; apply Rinv_0_lt_compat; nra]. }
    lra. }
  unfold Rdiv. apply Rle_trans with (E * N' * / S).
  - apply Rmult_le_compat_r; [left; apply Rinv_0_lt_compat, Su|exact Hnum].
  - replace (E * E * (N' * / S')) with (E * N' * (E * / S')) by ring.
    apply Rmult_le_compat_l; [nra|exact Hinv].
Qed.

(** As a pure-DP statement over the candidates: the selection's law is [2 D / beta]-close. *)
Theorem exponential_selection_dp (cs : list C) beta (u u' : C -> R) (D : R) :
  cs <> [] -> 0 < beta -> (forall b, Rabs (u b - u' b) <= D) ->
  pw_close (2 * D / beta) (em cs beta u) (em cs beta u').
Proof. intros Hne Hb H a. apply em_ratio; auto. Qed.
End Expo.
