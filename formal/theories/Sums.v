(** Finite sums over lists, in [R]: the only summation the development uses. *)
From Coq Require Import Reals Lra List.
Import ListNotations.
Open Scope R_scope.

Fixpoint sumR {X : Type} (l : list X) (f : X -> R) : R :=
  match l with [] => 0 | x :: t => f x + sumR t f end.

Lemma sumR_app {X} (l1 l2 : list X) f : sumR (l1 ++ l2) f = sumR l1 f + sumR l2 f.
Proof. induction l1; simpl; lra. Qed.

Lemma sumR_le {X} (l : list X) f g : (forall x, In x l -> f x <= g x) -> sumR l f <= sumR l g.
Proof.
  induction l; simpl; intros H; [lra|].
  assert (f a <= g a) by (apply H; auto). assert (sumR l f <= sumR l g) by (apply IHl; auto). lra.
Qed.

Lemma sumR_nonneg {X} (l : list X) f : (forall x, In x l -> 0 <= f x) -> 0 <= sumR l f.
Proof.
  induction l; simpl; intros H; [lra|].
  assert (0 <= f a) by (apply H; auto). assert (0 <= sumR l f) by (apply IHl; auto). lra.
Qed.

Lemma sumR_plus {X} (l : list X) f g : sumR l (fun x => f x + g x) = sumR l f + sumR l g.
Proof. induction l; simpl; lra. Qed.

Lemma sumR_minus {X} (l : list X) f g : sumR l (fun x => f x - g x) = sumR l f - sumR l g.
Proof. induction l; simpl; lra. Qed.

Lemma sumR_scal {X} (l : list X) c f : sumR l (fun x => c * f x) = c * sumR l f.
Proof. induction l; simpl; lra. Qed.

Lemma sumR_ext {X} (l : list X) f g : (forall x, In x l -> f x = g x) -> sumR l f = sumR l g.
Proof.
  induction l; simpl; intros H; [reflexivity|]. rewrite H, IHl; auto.
Qed.

Lemma sumR_zero {X} (l : list X) : sumR l (fun _ => 0) = 0.
Proof. induction l; simpl; lra. Qed.

Lemma sumR_swap {X Y} (l : list X) (m : list Y) (f : X -> Y -> R) :
  sumR l (fun x => sumR m (fun y => f x y)) = sumR m (fun y => sumR l (fun x => f x y)).
Proof.
  induction l; simpl.
  - symmetry. apply sumR_zero.
  - rewrite IHl, <- sumR_plus. reflexivity.
Qed.

Lemma sumR_abs {X} (l : list X) f : Rabs (sumR l f) <= sumR l (fun x => Rabs (f x)).
Proof.
  induction l; simpl.
  - rewrite Rabs_R0; lra.
  - eapply Rle_trans; [apply Rabs_triang|]. lra.
Qed.

Lemma sumR_map {X Y} (l : list X) (g : X -> Y) f : sumR (map g l) f = sumR l (fun x => f (g x)).
Proof. induction l; simpl; congruence. Qed.

Lemma sumR_const {X} (l : list X) c : sumR l (fun _ => c) = INR (length l) * c.
Proof. induction l; simpl length; [simpl; lra|]. rewrite S_INR. simpl. lra. Qed.

(** The largest value of [f] over a list (0 on the empty list, for non-negative quantities). *)
Fixpoint maxR {X} (l : list X) (f : X -> R) : R :=
  match l with [] => 0 | x :: t => Rmax (f x) (maxR t f) end.

Lemma maxR_ge {X} (l : list X) f x : In x l -> f x <= maxR l f.
Proof.
  induction l; simpl; intros H; [contradiction|]. destruct H as [->|H].
  - apply Rmax_l.
  - eapply Rle_trans; [apply IHl; auto|apply Rmax_r].
Qed.

(** Products. *)
Fixpoint prodR {X} (l : list X) (f : X -> R) : R :=
  match l with [] => 1 | x :: t => f x * prodR t f end.

Lemma prodR_nonneg {X} (l : list X) f : (forall x, In x l -> 0 <= f x) -> 0 <= prodR l f.
Proof.
  induction l; simpl; intros H; [lra|]. apply Rmult_le_pos; [apply H; auto|apply IHl; auto].
Qed.
