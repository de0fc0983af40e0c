(* Reads one query per line on stdin, prints the extracted map's exact value as
   "num/den" in binary (the trusted glue: parsing and printing only, no arithmetic). *)
open Maps

let pos_of_bin s =
  let p = ref XH in
  for i = 1 to String.length s - 1 do p := (if s.[i] = '1' then XI !p else XO !p) done; !p

let rec bin_of_pos = function XH -> "1" | XO p -> bin_of_pos p ^ "0" | XI p -> bin_of_pos p ^ "1"

let z_of s = if s = "0" then Z0 else if s.[0] = '-' then Zneg (pos_of_bin (String.sub s 1 (String.length s - 1))) else Zpos (pos_of_bin s)
let str_z = function Z0 -> "0" | Zpos p -> bin_of_pos p | Zneg p -> "-" ^ bin_of_pos p

(* a rational "n/d", n signed binary, d positive binary *)
let q_of s = match String.split_on_char '/' s with
  | [n; d] -> { qnum = z_of n; qden = pos_of_bin d }
  | _ -> failwith ("bad rational " ^ s)
let str_q q = let q = qred q in str_z q.qnum ^ "/" ^ bin_of_pos q.qden

let list_of f s = if s = "" || s = "-" then [] else List.map f (String.split_on_char ',' s)
let kind s = kind_of (s = "1")
let b s = s = "1"

let answer line = match String.split_on_char ' ' (String.trim line) with
  | ["l1"; k; sz; root; d; lv] -> str_q (hier_l1_map (kind k) (b sz) (if root = "-" then None else Some (q_of root)) (list_of q_of lv) (int_of_string d))
  | ["l2"; k; sz; root; d; lv] -> str_q (hier_l2_map (kind k) (b sz) (if root = "-" then None else Some (q_of root)) (list_of q_of lv) (int_of_string d))
  | ["tl2"; k; sz; d; par; lvs; ds] -> str_q (tree_l2_map (kind k) (b sz) (list_of int_of_string par) (list_of int_of_string lvs) (list_of q_of ds) (int_of_string d))
  | ["zcdp"; d] -> str_q (zcdp_map (q_of d))
  | ["expsel"; beta; d] -> str_q (expsel_map (q_of beta) (q_of d))
  | ["treeem"; eps; k; d] -> str_q (tree_em_map (q_of eps) (kind k) (int_of_string d))
  | ["privtree"; lam; sc; k; sz; d] -> str_q (privtree_map (q_of lam) (q_of sc) (kind k) (b sz) (int_of_string d))
  | ["noisy"; c; bd] -> str_q (noisy_size_map (q_of c) (q_of bd))
  | ["occ"; k; sz; d] ->
      let rec bin n = if n <= 1 then string_of_int n else bin (n / 2) ^ string_of_int (n mod 2) in
      bin (occupancy_map (kind k) (b sz) (int_of_string d)) ^ "/1"
  | ["ident"; d] -> str_q (identity_map (q_of d))
  | ["adaptive"; k; sz; sens; beta; d; cands] ->
      str_q (adaptive_map (kind k) (b sz) (q_of sens) (q_of beta) (List.map (list_of q_of) (String.split_on_char ';' cands)) (int_of_string d))
  | ["azmain"; k; sz; d; cands] ->
      str_q (adaptive_zcdp_main (kind k) (b sz) (List.map (list_of q_of) (String.split_on_char ';' cands)) (int_of_string d))
  | ["score"; capped; priv; l; j; top; cands] ->
      let cand s = match String.split_on_char ':' s with
        | [c; w; caps] -> ((q_of c, list_of q_of w), list_of q_of caps)
        | _ -> failwith "bad candidate" in
      str_q (score_query (b capped) (b priv) (int_of_string l) (int_of_string j) (q_of top) (List.map cand (String.split_on_char ';' cands)))
  | _ -> "error: " ^ line

let () =
  try while true do
    let line = input_line stdin in
    print_endline (try answer line with e -> "error: " ^ Printexc.to_string e); flush stdout
  done with End_of_file -> ()
