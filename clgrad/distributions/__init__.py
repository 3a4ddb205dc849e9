"""clgrad.distributions: torch.distributions on OpenCL devices. Distributions with sample,
rsample (reparameterised, with gradients), log_prob, entropy, cdf/icdf, mean/variance; their
constraints and transforms; kl_divergence with register_kl. Samplers draw from clgrad's Philox
generator on the device (Gamma, Poisson and Binomial by rejection in a kernel).

>>> import clgrad
>>> from clgrad.distributions import Categorical, Normal, kl_divergence
>>> _ = clgrad.manual_seed(0)
>>> pi = Categorical(logits=clgrad.zeros(4))
>>> a = pi.sample(); pi.log_prob(a).shape, round(pi.entropy().item(), 4)
(clgrad.Size([]), 1.3863)
>>> q = Normal(clgrad.zeros(3, requires_grad=True), 1.0)
>>> kl_divergence(q, Normal(0.0, 1.0)).sum().item()
0.0
"""
from . import constraints, transforms
from .bernoulli import Bernoulli
from .beta import Beta
from .binomial import Binomial
from .categorical import Categorical
from .cauchy import Cauchy
from .chi2 import Chi2
from .constraint_registry import biject_to, transform_to
from .continuous_bernoulli import ContinuousBernoulli
from .dirichlet import Dirichlet
from .distribution import Distribution
from .exp_family import ExponentialFamily
from .exponential import Exponential
from .fishersnedecor import FisherSnedecor
from .gamma import Gamma
from .generalized_pareto import GeneralizedPareto
from .geometric import Geometric
from .gumbel import Gumbel
from .half_cauchy import HalfCauchy
from .half_normal import HalfNormal
from .independent import Independent
from .inverse_gamma import InverseGamma
from .kl import kl_divergence, register_kl
from .kumaraswamy import Kumaraswamy
from .laplace import Laplace
from .lkj_cholesky import LKJCholesky
from .log_normal import LogNormal
from .logistic_normal import LogisticNormal
from .lowrank_multivariate_normal import LowRankMultivariateNormal
from .mixture_same_family import MixtureSameFamily
from .multinomial import Multinomial
from .multivariate_normal import MultivariateNormal
from .negative_binomial import NegativeBinomial
from .normal import Normal
from .one_hot_categorical import OneHotCategorical, OneHotCategoricalStraightThrough
from .pareto import Pareto
from .poisson import Poisson
from .relaxed_bernoulli import LogitRelaxedBernoulli, RelaxedBernoulli
from .relaxed_categorical import ExpRelaxedCategorical, RelaxedOneHotCategorical
from .studentT import StudentT
from .transformed_distribution import TransformedDistribution
from .transforms import *  # noqa: F401,F403
from .transforms import __all__ as _transforms_all
from .uniform import Uniform
from .von_mises import VonMises
from .weibull import Weibull
from .wishart import Wishart

__all__ = [
    "Bernoulli", "Beta", "Binomial", "Categorical", "Cauchy", "Chi2", "ContinuousBernoulli",
    "Dirichlet", "FisherSnedecor", "GeneralizedPareto", "InverseGamma", "Kumaraswamy",
    "LKJCholesky", "LogisticNormal", "NegativeBinomial", "Pareto", "VonMises", "Weibull",
    "Wishart",
    "Distribution", "ExpRelaxedCategorical", "Exponential", "ExponentialFamily", "Gamma",
    "Geometric", "Gumbel", "HalfCauchy", "HalfNormal", "Independent", "Laplace",
    "LogNormal", "LogitRelaxedBernoulli", "LowRankMultivariateNormal", "MixtureSameFamily",
    "Multinomial", "MultivariateNormal", "Normal", "OneHotCategorical",
    "OneHotCategoricalStraightThrough", "Poisson", "RelaxedBernoulli",
    "RelaxedOneHotCategorical", "StudentT", "TransformedDistribution", "Uniform",
    "biject_to", "constraints", "kl_divergence", "register_kl", "transform_to", "transforms",
] + list(_transforms_all)
