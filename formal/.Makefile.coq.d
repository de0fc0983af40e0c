theories/Sums.vo theories/Sums.glob theories/Sums.v.beautified theories/Sums.required_vo: theories/Sums.v 
theories/Sums.vio: theories/Sums.v 
theories/Sums.vos theories/Sums.vok theories/Sums.required_vos: theories/Sums.v 
theories/Neighbours.vo theories/Neighbours.glob theories/Neighbours.v.beautified theories/Neighbours.required_vo: theories/Neighbours.v 
theories/Neighbours.vio: theories/Neighbours.v 
theories/Neighbours.vos theories/Neighbours.vok theories/Neighbours.required_vos: theories/Neighbours.v 
theories/Hist.vo theories/Hist.glob theories/Hist.v.beautified theories/Hist.required_vo: theories/Hist.v theories/Sums.vo theories/Neighbours.vo
theories/Hist.vio: theories/Hist.v theories/Sums.vio theories/Neighbours.vio
theories/Hist.vos theories/Hist.vok theories/Hist.required_vos: theories/Hist.v theories/Sums.vos theories/Neighbours.vos
theories/DP.vo theories/DP.glob theories/DP.v.beautified theories/DP.required_vo: theories/DP.v theories/Sums.vo theories/Neighbours.vo
theories/DP.vio: theories/DP.v theories/Sums.vio theories/Neighbours.vio
theories/DP.vos theories/DP.vok theories/DP.required_vos: theories/DP.v theories/Sums.vos theories/Neighbours.vos
theories/Laplace.vo theories/Laplace.glob theories/Laplace.v.beautified theories/Laplace.required_vo: theories/Laplace.v theories/Sums.vo theories/Neighbours.vo theories/Hist.vo theories/DP.vo
theories/Laplace.vio: theories/Laplace.v theories/Sums.vio theories/Neighbours.vio theories/Hist.vio theories/DP.vio
theories/Laplace.vos theories/Laplace.vok theories/Laplace.required_vos: theories/Laplace.v theories/Sums.vos theories/Neighbours.vos theories/Hist.vos theories/DP.vos
theories/Expo.vo theories/Expo.glob theories/Expo.v.beautified theories/Expo.required_vo: theories/Expo.v theories/Sums.vo theories/DP.vo
theories/Expo.vio: theories/Expo.v theories/Sums.vio theories/DP.vio
theories/Expo.vos theories/Expo.vok theories/Expo.required_vos: theories/Expo.v theories/Sums.vos theories/DP.vos
theories/Vec.vo theories/Vec.glob theories/Vec.v.beautified theories/Vec.required_vo: theories/Vec.v theories/Sums.vo theories/Neighbours.vo theories/Hist.vo
theories/Vec.vio: theories/Vec.v theories/Sums.vio theories/Neighbours.vio theories/Hist.vio
theories/Vec.vos theories/Vec.vok theories/Vec.required_vos: theories/Vec.v theories/Sums.vos theories/Neighbours.vos theories/Hist.vos
theories/Gaussian.vo theories/Gaussian.glob theories/Gaussian.v.beautified theories/Gaussian.required_vo: theories/Gaussian.v theories/Sums.vo theories/Neighbours.vo theories/Hist.vo theories/Laplace.vo theories/Vec.vo
theories/Gaussian.vio: theories/Gaussian.v theories/Sums.vio theories/Neighbours.vio theories/Hist.vio theories/Laplace.vio theories/Vec.vio
theories/Gaussian.vos theories/Gaussian.vok theories/Gaussian.required_vos: theories/Gaussian.v theories/Sums.vos theories/Neighbours.vos theories/Hist.vos theories/Laplace.vos theories/Vec.vos
theories/Scores.vo theories/Scores.glob theories/Scores.v.beautified theories/Scores.required_vo: theories/Scores.v theories/Sums.vo theories/Neighbours.vo theories/Hist.vo theories/Vec.vo
theories/Scores.vio: theories/Scores.v theories/Sums.vio theories/Neighbours.vio theories/Hist.vio theories/Vec.vio
theories/Scores.vos theories/Scores.vok theories/Scores.required_vos: theories/Scores.v theories/Sums.vos theories/Neighbours.vos theories/Hist.vos theories/Vec.vos
theories/Mechanisms.vo theories/Mechanisms.glob theories/Mechanisms.v.beautified theories/Mechanisms.required_vo: theories/Mechanisms.v theories/Sums.vo theories/Neighbours.vo theories/Hist.vo theories/DP.vo theories/Laplace.vo theories/Expo.vo theories/Vec.vo
theories/Mechanisms.vio: theories/Mechanisms.v theories/Sums.vio theories/Neighbours.vio theories/Hist.vio theories/DP.vio theories/Laplace.vio theories/Expo.vio theories/Vec.vio
theories/Mechanisms.vos theories/Mechanisms.vok theories/Mechanisms.required_vos: theories/Mechanisms.v theories/Sums.vos theories/Neighbours.vos theories/Hist.vos theories/DP.vos theories/Laplace.vos theories/Expo.vos theories/Vec.vos
theories/PrivTree.vo theories/PrivTree.glob theories/PrivTree.v.beautified theories/PrivTree.required_vo: theories/PrivTree.v theories/Sums.vo theories/Neighbours.vo theories/Hist.vo theories/DP.vo theories/Laplace.vo
theories/PrivTree.vio: theories/PrivTree.v theories/Sums.vio theories/Neighbours.vio theories/Hist.vio theories/DP.vio theories/Laplace.vio
theories/PrivTree.vos theories/PrivTree.vok theories/PrivTree.required_vos: theories/PrivTree.v theories/Sums.vos theories/Neighbours.vos theories/Hist.vos theories/DP.vos theories/Laplace.vos
