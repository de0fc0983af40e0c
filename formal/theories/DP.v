(** Pure differential privacy on countable outcome spaces: pointwise bounds, events (finite
    and countable), post-processing with independent coins, adaptive composition, group
    privacy (docs/proofs/postprocessing.rst, noisy_size.rst, adaptive_pruned_pmm.rst). *)
From Coq Require Import Reals Lra List Permutation.
From OWFormal Require Import Sums Neighbours.
Import ListNotations.
Open Scope R_scope.

Lemma exp_le_mono x y : x <= y -> exp x <= exp y.
Proof. intros H. destruct (Rle_lt_or_eq_dec _ _ H) as [Hl|Heq]; [left; apply exp_increasing, Hl|rewrite Heq; lra]. Qed.

(** [P] is [eps]-close to [Q] pointwise: the pmfs of two output laws, outcome by outcome. *)
Definition pw_close {O : Type} (eps : R) (P Q : O -> R) : Prop := forall o, P o <= exp eps * Q o.

Lemma pw_close_mono {O} e1 e2 (P Q : O -> R) :
  e1 <= e2 -> (forall o, 0 <= Q o) -> pw_close e1 P Q -> pw_close e2 P Q.
Proof.
  intros He HQ H o. eapply Rle_trans; [apply H|].
  apply Rmult_le_compat_r; [apply HQ|apply exp_le_mono, He].
Qed.

(** Finite events. *)
Theorem events_finite {O} eps (P Q : O -> R) (E : list O) :
  pw_close eps P Q -> sumR E P <= exp eps * sumR E Q.
Proof.
  intros H. rewrite <- sumR_scal. apply sumR_le. intros o _. apply H.
Qed.

(** Countable events: the outcome space enumerated by [enum] (every countable space is), an
    event a predicate [E], its probability the sum of the series of the pmf over [E]. *)
Definition restrict {O} (E : O -> bool) (P : O -> R) (enum : nat -> O) : nat -> R :=
  fun i => if E (enum i) then P (enum i) else 0.

Theorem events_countable {O} eps (P Q : O -> R) (enum : nat -> O) (E : O -> bool) (lp lq : R) :
  pw_close eps P Q ->
  infinite_sum (restrict E P enum) lp -> infinite_sum (restrict E Q enum) lq ->
  lp <= exp eps * lq.
Proof.
  intros H Hp Hq.
  assert (Hcq : Un_cv (fun N => exp eps * sum_f_R0 (restrict E Q enum) N) (exp eps * lq)).
  { apply CV_mult; [intros e He; exists 0%nat; intros; rewrite R_dist_eq; exact He|exact Hq]. }
  refine (Rle_cv_lim _ Hp Hcq).
  intros N. rewrite scal_sum. apply sum_Rle. intros i _. unfold restrict.
  destruct (E (enum i)); [rewrite Rmult_comm; apply H|lra].
Qed.

(** Post-processing (docs/proofs/postprocessing.rst): outputs [g(o, c)] with coins [c] drawn
    from a law [C] independent of the data.  The joint pmf of [(o, c)] is [P o * C c]; every
    event [E'] of the outputs is the event [E' o g] of [(o, c)], so the bound carries over. *)
Theorem postprocessing_pointwise {O K} eps (P Q : O -> R) (C : K -> R) :
  (forall c, 0 <= C c) -> pw_close eps P Q ->
  pw_close eps (fun oc => P (fst oc) * C (snd oc)) (fun oc => Q (fst oc) * C (snd oc)).
Proof.
  intros HC H [o c]. simpl. rewrite <- Rmult_assoc. apply Rmult_le_compat_r; [apply HC|apply H].
Qed.

Theorem postprocessing {O K Out} eps (P Q : O -> R) (C : K -> R) (g : O * K -> Out)
    (enum : nat -> O * K) (E : Out -> bool) lp lq :
  (forall c, 0 <= C c) -> pw_close eps P Q ->
  infinite_sum (restrict (fun oc => E (g oc)) (fun oc => P (fst oc) * C (snd oc)) enum) lp ->
  infinite_sum (restrict (fun oc => E (g oc)) (fun oc => Q (fst oc) * C (snd oc)) enum) lq ->
  lp <= exp eps * lq.
Proof.
  intros HC H Hp Hq. eapply events_countable; [|exact Hp|exact Hq].
  apply postprocessing_pointwise; auto.
Qed.

(** Adaptive sequential composition: a first release [a] with law [P1], then a second whose
    law [P2 a] may depend on [a] (the selected candidate, the noisy size). *)
Theorem composition {O1 O2} e1 e2 (P1 Q1 : O1 -> R) (P2 Q2 : O1 -> O2 -> R) :
  (forall a, 0 <= Q1 a) -> (forall a o, 0 <= P2 a o) ->
  pw_close e1 P1 Q1 -> (forall a, pw_close e2 (P2 a) (Q2 a)) ->
  pw_close (e1 + e2) (fun ao => P1 (fst ao) * P2 (fst ao) (snd ao))
                     (fun ao => Q1 (fst ao) * Q2 (fst ao) (snd ao)).
Proof.
  intros HQ1 HP2 H1 H2 [a o]. simpl. rewrite exp_plus.
  specialize (H1 a). specialize (H2 a o).
  assert (0 <= exp e1) by (left; apply exp_pos). assert (0 <= exp e2) by (left; apply exp_pos).
  apply Rle_trans with (exp e1 * Q1 a * P2 a o).
  - apply Rmult_le_compat_r; auto.
  - replace (exp e1 * exp e2 * (Q1 a * Q2 a o)) with (exp e1 * Q1 a * (exp e2 * Q2 a o)) by ring.
    apply Rmult_le_compat_l; [apply Rmult_le_pos; auto|exact H2].
Qed.

Lemma pw_close_trans {O} e1 e2 (P Q S : O -> R) :
  pw_close e1 P Q -> pw_close e2 Q S -> pw_close (e1 + e2) P S.
Proof.
  intros H1 H2 o. rewrite exp_plus. eapply Rle_trans; [apply H1|].
  rewrite Rmult_assoc. apply Rmult_le_compat_l; [left; apply exp_pos|apply H2].
Qed.

Lemma pw_close_refl {O} (P : O -> R) (HP : forall o, 0 <= P o) : pw_close 0 P P.
Proof. intros o. rewrite exp_0. lra. Qed.

(** Group privacy: a mechanism on multisets whose law moves by at most [e] when one record is
    added or removed is [(|a| + |b|) e]-close between [c + a] and [c + b] (through [c]). *)
Section Group.
Variable A O : Type.
Variable M : list A -> O -> R.
Hypothesis M_nonneg : forall l o, 0 <= M l o.
Hypothesis M_perm : forall l1 l2 o, Permutation l1 l2 -> M l1 o = M l2 o.

Lemma pw_perm_l e' l1 l2 Q : Permutation l1 l2 -> pw_close e' (M l2) Q -> pw_close e' (M l1) Q.
Proof. intros H H2 o. rewrite (M_perm l1 l2 o H). apply H2. Qed.

Lemma pw_perm_r e' l1 l2 P : Permutation l1 l2 -> pw_close e' P (M l2) -> pw_close e' P (M l1).
Proof. intros H H2 o. rewrite (M_perm l1 l2 o H). apply H2. Qed.
Variable e : R.
Hypothesis e_nonneg : 0 <= e.
Hypothesis add_one : forall x l, pw_close e (M (x :: l)) (M l) /\ pw_close e (M l) (M (x :: l)).

Lemma group_app c a : pw_close (INR (length a) * e) (M (c ++ a)) (M c) /\
                      pw_close (INR (length a) * e) (M c) (M (c ++ a)).
Proof.
  induction a as [|x a IH].
  - rewrite app_nil_r. simpl. rewrite Rmult_0_l. split; apply pw_close_refl, M_nonneg.
  - assert (Hp : Permutation (c ++ x :: a) (x :: c ++ a)) by (symmetry; apply Permutation_middle).
    change (length (x :: a)) with (S (length a)). rewrite S_INR.
    destruct IH as [IH1 IH2]. destruct (add_one x (c ++ a)) as [A1 A2]. split.
    + replace ((INR (length a) + 1) * e) with (e + INR (length a) * e) by ring.
      apply (pw_perm_l _ _ _ _ Hp). eapply pw_close_trans; eauto.
    + replace ((INR (length a) + 1) * e) with (INR (length a) * e + e) by ring.
      apply (pw_perm_r _ _ _ _ Hp). eapply pw_close_trans; eauto.
Qed.

Theorem group_privacy c a b :
  pw_close ((INR (length a) + INR (length b)) * e) (M (c ++ a)) (M (c ++ b)).
Proof.
  destruct (group_app c a) as [Ha _]. destruct (group_app c b) as [_ Hb].
  rewrite Rmult_plus_distr_r. eapply pw_close_trans; eauto.
Qed.

(** With the metrics: [d_in] records without a size, twice [rep] with one. *)
Theorem group_privacy_close k n d xs ys :
  close k n d xs ys ->
  pw_close ((if sized n then 2 else 1) * units k n d * e) (M xs) (M ys).
Proof.
  intros Hc. destruct (close_decomp k n d xs ys Hc) as (c & a & b & Ha & Hb & _ & _ & _ & Hu).
  apply (pw_perm_l _ _ _ _ Ha). apply (pw_perm_r _ _ _ _ Hb).
  eapply pw_close_mono; [|apply M_nonneg|apply group_privacy].
  apply Rmult_le_compat_r; [exact e_nonneg|exact Hu].
Qed.
End Group.
