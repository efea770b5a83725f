package io.github.distlock.sample;

import java.util.List;

import org.springframework.http.HttpStatus;
import org.springframework.http.ProblemDetail;
import org.springframework.web.bind.annotation.ExceptionHandler;
import org.springframework.web.bind.annotation.GetMapping;
import org.springframework.web.bind.annotation.PostMapping;
import org.springframework.web.bind.annotation.RequestMapping;
import org.springframework.web.bind.annotation.RequestParam;
import org.springframework.web.bind.annotation.RestController;

/**
 * What the dashboard at {@code /} (static/index.html) reads and fires, beside the shop's API and
 * {@code /actuator/distlock}.
 */
@RestController
@RequestMapping("/api")
public class DashboardController {

    private final ShopRepository repository;
    private final FlashSaleDemo flashSale;

    DashboardController(ShopRepository repository, FlashSaleDemo flashSale) {
        this.repository = repository;
        this.flashSale = flashSale;
    }

    /** The latest products with stock and sold count. */
    @GetMapping("/products")
    public List<ProductView> products() {
        return repository.findProductViews(20);
    }

    /** Runs a flash sale at the locked ({@code mode=locked}) or the unsafe endpoint. */
    @PostMapping("/demo/flash-sale")
    public FlashSaleDemo.FlashSaleResult flashSale(@RequestParam String mode,
            @RequestParam(defaultValue = "5") int stock, @RequestParam(defaultValue = "30") int buyers)
            throws InterruptedException {
        if (!mode.equals("locked") && !mode.equals("unsafe")) {
            throw new IllegalArgumentException("mode must be locked or unsafe, was " + mode);
        }
        return flashSale.run(mode.equals("locked"), stock, buyers);
    }

    /**
     * The latest flash sale with locks and without, with their timelines: what the dashboard draws when it opens.
     */
    @GetMapping("/demo/flash-sales")
    public FlashSaleDemo.LatestSales latestFlashSales() {
        return flashSale.latest();
    }

    /** A mode, stock or crowd out of range: 400 with the reason. */
    @ExceptionHandler(IllegalArgumentException.class)
    ProblemDetail badSale(IllegalArgumentException ex) {
        return ProblemDetail.forStatusAndDetail(HttpStatus.BAD_REQUEST, ex.getMessage());
    }
}
